// JSON outputs of `llm` variables (output_type: JSON): the JSON schema sent to the engine's constrained decoder,
// and the check of what came back. Pure functions; thread-safe.
//
// Schema: an object with every field required, no additional properties; str → string, int → integer,
// float → number, bool → boolean; min/max → minimum/maximum.
// Check: the stripped text must parse as a JSON object holding every field with the declared type and within
// bounds (an int field accepts 3 and 3.0, never 3.5; a number field accepts ints). Extra fields are dropped.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "data/value.h"
#include "util/status.h"

namespace mmirage::process::llm {

std::string BuildJsonSchema(const std::vector<config::SchemaField>& fields);

// The parsed object with the schema's fields in schema order. Errors (kInvalidArgument) say what is wrong:
// "output is not valid JSON: ...", "field 'score' is missing", "field 'score' must be an integer, got \"3\"",
// "field 'score' = 7 is above the maximum 3".
Result<Value> CheckJsonOutput(std::string_view text, const std::vector<config::SchemaField>& fields);

}  // namespace mmirage::process::llm
