#include "exec/preview.h"

#include <memory>

#include "data/dataset.h"
#include "data/json.h"
#include "engine/engine.h"
#include "pipeline/row_transform.h"
#include "process/cache_key.h"
#include "process/llm/image_inputs.h"

namespace mmirage::exec {
namespace {

const char* FieldTypeName(config::FieldType t) {
  switch (t) {
    case config::FieldType::kString: return "string";
    case config::FieldType::kInt: return "int";
    case config::FieldType::kNumber: return "number";
    case config::FieldType::kBool: return "bool";
  }
  return "string";
}

Value Placeholder(const config::OutputVar& o) {
  if (o.json && !o.schema.empty()) {
    Value obj = Value::EmptyObject();
    for (const auto& f : o.schema) obj.Set(f.name, "<" + o.name + "." + f.name + ": " + FieldTypeName(f.type) + ">");
    return obj;
  }
  return Value("<" + o.name + ": " + o.type + " output>");
}

void Indent(std::ostream& out, const std::string& text, const char* prefix) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    out << prefix << text.substr(start, nl == std::string::npos ? std::string::npos : nl - start) << "\n";
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
}

// "<source> (image/png 32x32, 1234 bytes)", or why the image cannot be read.
std::string DescribeImage(Env* env, const engine::ImageInput& im) {
  if (im.kind == engine::ImageInput::Kind::kUrl) return im.source + " (URL: fetched by the server; not checked here)";
  std::string bytes = im.bytes;
  if (im.kind == engine::ImageInput::Kind::kFile) {
    auto r = env->ReadFileToString(im.source);
    if (!r.ok()) return im.source + " (unreadable: " + r.status().message() + ")";
    bytes = std::move(*r);
  }
  const std::string mime = engine::SniffImageMime(bytes);
  const process::llm::ImageSize size = process::llm::SniffImageSize(bytes);
  std::string d = im.source + " (" + (mime.empty() ? std::string("not a known image format") : mime);
  if (size.width > 0) d += " " + std::to_string(size.width) + "x" + std::to_string(size.height);
  return d + ", " + std::to_string(bytes.size()) + " bytes)";
}

// The prompt with each image marker shown as "<image N: var>".
std::string ShowMarkers(const std::string& prompt, const std::vector<std::string>& vars) {
  std::string out;
  const std::string marker = engine::kImageMarker;
  size_t from = 0, n = 0;
  for (size_t at = prompt.find(marker); at != std::string::npos; at = prompt.find(marker, from)) {
    out.append(prompt, from, at - from);
    out += "<image " + std::to_string(n + 1) + (n < vars.size() ? ": " + vars[n] : std::string()) + ">";
    ++n;
    from = at + marker.size();
  }
  out.append(prompt, from, std::string::npos);
  return out;
}

// What the preview of one dataset part shares between its rows.
struct PreviewContext {
  Env* env;
  const config::Config& config;
  pipeline::RowTransform& transform;
  const std::vector<std::string>& image_names;
};

// The extracted variables, with each image shown as its description.
Value ShownVariables(const PreviewContext& c, const Value& vars) {
  Value shown = vars;
  for (const auto& name : c.image_names) {
    const Value* v = vars.Find(name);
    if (v == nullptr || v->is_null()) continue;
    auto im = process::llm::ToImageInput(name, *v);
    shown.Set(name, Value("<image: " + (im.ok() ? DescribeImage(c.env, *im) : im.status().message()) + ">"));
  }
  return shown;
}

void SetError(Value& report, const pipeline::RowError& e, int64_t* failures) {
  ++*failures;
  report.Set("error", Value(std::string(pipeline::StageName(e.stage)) + ": " + e.message));
}

// Renders every prompt into report["prompts"] (and report["images"]), setting each output to its placeholder so
// later prompts can use it. On the first row error: report["error"] (before the prompts rendered so far), false.
bool RenderPrompts(const PreviewContext& c, Value& vars, Value& report, int64_t* failures) {
  Value prompts = Value::EmptyObject();
  Value images = Value::EmptyObject();
  std::optional<pipeline::RowError> error;
  for (size_t i = 0; i < c.config.processing.outputs.size(); ++i) {
    const auto& out = c.config.processing.outputs[i];
    if (out.prompt_tmpl) {
      auto p = c.transform.RenderPrompt(i, vars);
      if (!p.ok) {
        error = p.error;
        break;
      }
      if (!c.image_names.empty() && out.type == "llm") {
        auto placed = process::llm::PlaceImages(p.value, vars, c.image_names);
        if (!placed.ok()) {
          error = pipeline::RowError{pipeline::Stage::kGenerate, placed.status().message()};
          break;
        }
        prompts.Set(out.name, ShowMarkers(placed->prompt, placed->variables));
        Value list = Value(Value::Array{});
        for (size_t k = 0; k < placed->images.size(); ++k) {
          list.mutable_array().push_back(Value("<image " + std::to_string(k + 1) + ": " + placed->variables[k] +
                                               "> = " + DescribeImage(c.env, placed->images[k])));
        }
        if (!placed->images.empty()) images.Set(out.name, list);
      } else {
        prompts.Set(out.name, p.value);
      }
    }
    vars.Set(out.name, Placeholder(out));
  }
  if (error) SetError(report, *error, failures);
  report.Set("prompts", prompts);
  if (images.size() > 0) report.Set("images", images);
  return !error;
}

// The report of one row: variables, prompts, output row, or the error that stopped it (counted in *failures).
Value PreviewRow(const PreviewContext& c, const RawRow& raw, const std::string& split, int64_t* failures) {
  Value report = Value::EmptyObject();
  report.Set("row_index", static_cast<int64_t>(raw.index));
  if (!split.empty()) report.Set("split", split);
  report.Set("source", *raw.file + ":" + std::to_string(raw.line));
  auto fail = [&](const pipeline::RowError& e) {
    SetError(report, e, failures);
    return report;
  };
  Result<Value> row = raw.value != nullptr ? Result<Value>(*raw.value) : ParseJson(raw.text);
  if (!row.ok() || !row->is_object())
    return fail({pipeline::Stage::kRead, row.ok() ? "row is not a JSON object" : row.status().message()});
  auto ex = c.transform.Extract(*row);
  if (!ex.ok) return fail(ex.error);
  Value vars = ex.value;
  report.Set("variables", ShownVariables(c, vars));
  if (!RenderPrompts(c, vars, report, failures)) return report;
  auto r = c.transform.RenderOutput(*row, vars);
  if (!r.ok) return fail(r.error);
  report.Set("output", r.value);
  return report;
}

void PrintRowText(std::ostream& out, const Value& report, const RawRow& raw, const std::string& split) {
  out << "=== row " << raw.index << (split.empty() ? "" : " [" + split + "]") << " ("
      << report.Find("source")->as_string() << ") ===\n";
  if (const Value* v = report.Find("variables")) {
    out << "variables:\n";
    for (const auto& [k, val] : v->as_object()) out << "  " << k << " = " << ToJson(val) << "\n";
  }
  if (const Value* p = report.Find("prompts")) {
    for (const auto& [k, val] : p->as_object()) {
      out << "prompt of '" << k << "':\n";
      Indent(out, val.as_string(), "  | ");
      if (const Value* im = report.Find("images")) {
        if (const Value* list = im->Find(k)) {
          for (const auto& line : list->as_array()) out << "  " << line.as_string() << "\n";
        }
      }
    }
  }
  if (const Value* o = report.Find("output")) {
    out << "output row:\n";
    Indent(out, ToJsonPretty(*o, 2), "  ");
  }
  if (const Value* e = report.Find("error")) out << "ERROR: " << e->as_string() << "\n";
  out << "\n";
}

// Which outputs the generation cache will answer on a re-run (deterministic requests only); printed in text mode.
Value CachePlans(const config::Config& config, bool json, std::ostream& out) {
  Value cached = Value::EmptyObject();
  for (const auto& o : config.processing.outputs) {
    process::OutputCachePlan plan = process::PlanOutputCache(config, o);
    cached.Set(o.name, plan.cached);
    if (!json)
      out << "generation cache: " << o.name << ": " << (plan.cached ? "cached" : "not cached") << " (" << plan.reason
          << ")\n";
  }
  if (!json && !config.processing.outputs.empty()) out << "\n";
  return cached;
}

}  // namespace

Result<int64_t> Preview(Env* env, const config::Config& config, const PreviewOptions& options, std::ostream& out) {
  int64_t failures = 0;
  const Value cached = CachePlans(config, options.json, out);
  const std::vector<std::string> image_names = process::llm::ImageVariableNames(config);
  for (const auto& dc : config.loading.datasets) {
    auto parts = ResolveDatasetParts(env, dc.type, dc.path, dc.splits);
    if (!parts.ok()) return parts.status().WithContext(dc.loc.ToString() + ": dataset");
    pipeline::RowTransform transform(&config, env, dc.image_base_path.value_or(""));
    const PreviewContext c{env, config, transform, image_names};
    for (const auto& part : *parts) {
      auto n = CountRows(env, part);
      if (!n.ok()) return n.status();
      RowRange range = ShardRange(*n, config.loading.num_shards, config.loading.shard_id);
      range.end = std::min<uint64_t>(range.end, range.begin + static_cast<uint64_t>(options.rows));
      RowStream stream(env, part, range);
      RawRow raw;
      while (true) {
        auto more = stream.Next(&raw);
        if (!more.ok()) return more.status();
        if (!*more) break;
        Value report = PreviewRow(c, raw, part.split, &failures);
        if (options.json) {
          if (!config.processing.outputs.empty()) report.Set("cached_outputs", cached);
          out << ToJson(report) << "\n";
        } else {
          PrintRowText(out, report, raw, part.split);
        }
      }
    }
  }
  return failures;
}

}  // namespace mmirage::exec
