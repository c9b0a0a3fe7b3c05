// A tuned copy of a config's YAML text (`mmirage tune --write`): the given keys set, each annotated with a
// trailing comment, and the top-level `tuned_by` marker set. yaml-cpp does not keep comments, so the copy is
// re-emitted from the parsed document: keys, order, values and quoting are kept; comments and anchors are not
// (the header comment says so). Pure function; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace mmirage::config {

struct YamlEdit {
  // From the document root: map keys, or "[i]" for the i-th item of a sequence. Missing maps are created.
  std::vector<std::string> path;
  std::string value;    // plain YAML scalar text (e.g. 16, prefix, q8_0)
  std::string comment;  // trailing comment on the key
};

// Errors: YAML that does not parse, a path through a scalar or past a sequence's end (kInvalidArgument, named by
// `name`).
Result<std::string> RewriteTunedYaml(const std::string& yaml, const std::string& name,
                                     const std::vector<YamlEdit>& edits, const std::string& tuned_by,
                                     const std::string& header);

}  // namespace mmirage::config
