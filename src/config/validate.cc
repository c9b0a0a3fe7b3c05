// Cross-section checks, run once every section has been read, so that they fail at load time, before any row.
#include <algorithm>
#include <set>

#include "config/validate.h"

namespace mmirage::config {
namespace {

std::string JoinNames(const std::set<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return "[" + out + "]";
}

// Reports every name a template reads that is not known yet.
void CheckTemplateNames(Diag* d, const Loc& loc, const std::string& what, const tmpl::Template& t,
                        const std::set<std::string>& known, const std::set<std::string>& extra) {
  for (const auto& name : t.UndeclaredVariables()) {
    if (known.count(name) || extra.count(name)) continue;
    d->Error(loc, what + " uses undefined variable '" + name + "' (known here: " + JoinNames(known) +
                      "); inputs and earlier outputs are visible");
  }
}

void CheckOutputSchemaNames(Diag* d, const OutputNode& node, const std::set<std::string>& known,
                            std::set<std::string>* warned) {
  switch (node.kind) {
    case OutputNode::Kind::kMap:
      for (const auto& m : node.members) CheckOutputSchemaNames(d, m.second, known, warned);
      break;
    case OutputNode::Kind::kList:
      for (const auto& e : node.items) CheckOutputSchemaNames(d, e, known, warned);
      break;
    case OutputNode::Kind::kTemplate:
      if (!node.tmpl) break;
      for (const auto& name : node.tmpl->UndeclaredVariables()) {
        if (known.count(name) || !warned->insert(name).second) continue;
        d->Warn(node.loc, "output_schema uses '" + name +
                              "', which is neither an input nor an output; it renders as "
                              "an empty string");
      }
      break;
    case OutputNode::Kind::kConst: break;
  }
}

// The literal text of a template, without its {{ … }}, {% … %} and {# … #} parts.
std::string TemplateLiteralText(const std::string& t) {
  std::string out;
  for (size_t i = 0; i < t.size();) {
    if (t[i] == '{' && i + 1 < t.size() && (t[i + 1] == '{' || t[i + 1] == '%' || t[i + 1] == '#')) {
      const char* close = t[i + 1] == '{' ? "}}" : t[i + 1] == '%' ? "%}" : "#}";
      size_t e = t.find(close, i + 2);
      if (e == std::string::npos) break;
      i = e + 2;
    } else {
      out.push_back(t[i++]);
    }
  }
  return out;
}

}  // namespace

void ValidateConfig(Diag* d, Config* c) {
  LoadingParams& lp = c->loading;
  if (lp.datasets.empty()) { d->Error(Loc{d->file(), 1, 1}, "No datasets provided in config.loading_params.datasets"); }
  if (lp.num_shards < 1) {
    d->Error(lp.num_shards_loc, "loading_params.num_shards must be >= 1, got " + std::to_string(lp.num_shards));
  } else if (lp.shard_id < 0 || lp.shard_id >= lp.num_shards) {
    d->Error(lp.shard_id_loc, "Invalid shard_id=" + std::to_string(lp.shard_id) + ", num_shards=" +
                                  std::to_string(lp.num_shards) + " (expected 0 <= shard_id < num_shards)");
  }

  int sglang_image = 0;
  for (const auto& p : c->processors) {
    if (p.type == "image_gen" && p.image_gen.backend == "sglang") ++sglang_image;
  }
  if (sglang_image > 1)
    d->Error(c->processors.back().loc, "Only one backend='sglang' image_gen processor is supported per run");

  std::set<std::string> declared_types;
  for (const auto& p : c->processors) declared_types.insert(p.type);

  std::set<std::string> known;
  std::set<std::string> input_names;
  for (const auto& in : c->processing.inputs) {
    if (!input_names.insert(in.name).second)
      d->Warn(in.loc, "input '" + in.name + "' is declared twice; the later one wins");
    known.insert(in.name);
  }
  static const std::set<std::string> kNoExtra;
  static const std::set<std::string> kFilenameExtra = {"__sample_index", "__output_name", "__shard_id",
                                                       "__source_hash"};
  for (const auto& o : c->processing.outputs) {
    if (!declared_types.count(o.type)) {
      d->Error(o.loc, "output '" + o.name + "' has type '" + o.type + "' but no processor of that type is declared " +
                          "(declared: " + JoinNames(declared_types) + ")");
    }
    if (o.prompt_tmpl) CheckTemplateNames(d, o.loc, "output '" + o.name + "' prompt", *o.prompt_tmpl, known, kNoExtra);
    if (o.negative_prompt_tmpl)
      CheckTemplateNames(d, o.loc, "output '" + o.name + "' negative_prompt", *o.negative_prompt_tmpl, known, kNoExtra);
    if (o.filename_tmpl && TemplateLiteralText(o.filename_template).find_first_of("/\\") != std::string::npos) {
      d->Warn(o.loc, "output '" + o.name + "' filename_template '" + o.filename_template +
                         "' holds a path separator: "
                         "images are written directly in the processor's output_dir, with every character other than "
                         "A-Z a-z 0-9 . _ - replaced by '_' (no sub-folders, nothing outside it)");
    }
    if (o.filename_tmpl)
      CheckTemplateNames(d, o.loc, "output '" + o.name + "' filename_template", *o.filename_tmpl, known,
                         kFilenameExtra);
    if (known.count(o.name)) d->Warn(o.loc, "output '" + o.name + "' replaces an earlier variable of the same name");
    known.insert(o.name);
  }
  std::set<std::string> warned;
  CheckOutputSchemaNames(d, c->processing.output_schema, known, &warned);
}

}  // namespace mmirage::config
