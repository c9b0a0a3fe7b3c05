// `mmirage preview`: for the first N rows of a shard, show the extracted variables, every rendered prompt and the
// rendered output row, with model outputs as placeholders — no model is loaded. Users check prompts here before
// spending GPU hours. Image inputs show as placeholders with their resolved source, format, size in pixels and
// bytes; prompts show the user turn as the model gets it, with `<image N: var>` where each image goes.
#include <iostream>
#include <memory>

#include "cli/common.h"
#include "data/dataset.h"
#include "data/json.h"
#include "engine/engine.h"
#include "pipeline/row_transform.h"
#include "process/cache_key.h"
#include "process/image_inputs.h"
#include "util/env.h"

namespace mmirage::cli {
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

void Indent(const std::string& text, const char* prefix) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    std::cout << prefix << text.substr(start, nl == std::string::npos ? std::string::npos : nl - start) << "\n";
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
  const process::ImageSize size = process::SniffImageSize(bytes);
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

struct Opts {
  CommonOptions common;
  int64_t rows = 3;
  std::optional<int64_t> shard_id;
  std::string format = "text";
};

int Preview(const Opts& o) {
  if (!ApplyLogLevel(o.common)) return kExitUsage;
  auto config = LoadConfigOrReport(o.common.config_path, o.shard_id);
  if (!config) return kExitFailure;
  Env* env = Env::Default();
  bool json = o.format == "json";
  int failures = 0;
  // Which outputs the generation cache will answer on a re-run (deterministic requests only).
  Value cached = Value::EmptyObject();
  for (const auto& out : config->processing.outputs) {
    process::OutputCachePlan plan = process::PlanOutputCache(*config, out);
    cached.Set(out.name, plan.cached);
    if (!json) std::cout << "generation cache: " << out.name << ": " << (plan.cached ? "cached" : "not cached") << " ("
                         << plan.reason << ")\n";
  }
  if (!json && !config->processing.outputs.empty()) std::cout << "\n";
  for (const auto& dc : config->loading.datasets) {
    auto parts = ResolveDatasetParts(env, dc.type, dc.path, dc.splits);
    if (!parts.ok()) {
      ReportError(parts.status().WithContext(dc.loc.ToString() + ": dataset"));
      return kExitFailure;
    }
    pipeline::RowTransform transform(&*config, env, dc.image_base_path.value_or(""));
    const std::vector<std::string> image_names = process::ImageVariableNames(*config);
    for (const auto& part : *parts) {
      auto n = CountRows(env, part);
      if (!n.ok()) {
        ReportError(n.status());
        return kExitFailure;
      }
      RowRange range = ShardRange(*n, config->loading.num_shards, config->loading.shard_id);
      range.end = std::min<uint64_t>(range.end, range.begin + static_cast<uint64_t>(o.rows));
      RowStream stream(env, part, range);
      RawRow raw;
      while (true) {
        auto more = stream.Next(&raw);
        if (!more.ok()) {
          ReportError(more.status());
          return kExitFailure;
        }
        if (!*more) break;
        std::string source = *raw.file + ":" + std::to_string(raw.line);
        Value report = Value::EmptyObject();
        report.Set("row_index", static_cast<int64_t>(raw.index));
        if (!part.split.empty()) report.Set("split", part.split);
        report.Set("source", source);
        auto fail = [&](const pipeline::RowError& e) {
          ++failures;
          report.Set("error", Value(std::string(pipeline::StageName(e.stage)) + ": " + e.message));
        };
        Result<Value> row = raw.value != nullptr ? Result<Value>(*raw.value) : ParseJson(raw.text);
        Value vars;
        Value prompts = Value::EmptyObject();
        if (!row.ok() || !row->is_object()) {
          fail({pipeline::Stage::kRead, row.ok() ? "row is not a JSON object" : row.status().message()});
        } else {
          auto ex = transform.Extract(*row);
          if (!ex.ok) {
            fail(ex.error);
          } else {
            vars = ex.value;
            Value shown = vars;
            for (const auto& name : image_names) {
              const Value* v = vars.Find(name);
              if (v == nullptr || v->is_null()) continue;
              auto im = process::ToImageInput(name, *v);
              shown.Set(name, Value("<image: " + (im.ok() ? DescribeImage(env, *im) : im.status().message()) + ">"));
            }
            report.Set("variables", shown);
            Value images = Value::EmptyObject();
            bool ok = true;
            for (size_t i = 0; i < config->processing.outputs.size() && ok; ++i) {
              const auto& out = config->processing.outputs[i];
              if (out.prompt_tmpl) {
                auto p = transform.RenderPrompt(i, vars);
                if (!p.ok) {
                  fail(p.error);
                  ok = false;
                  break;
                }
                if (!image_names.empty() && out.type == "llm") {
                  auto placed = process::PlaceImages(p.value, vars, image_names);
                  if (!placed.ok()) {
                    fail({pipeline::Stage::kGenerate, placed.status().message()});
                    ok = false;
                    break;
                  }
                  prompts.Set(out.name, ShowMarkers(placed->prompt, placed->variables));
                  Value list = Value(Value::Array{});
                  for (size_t k = 0; k < placed->images.size(); ++k) {
                    list.mutable_array().push_back(Value("<image " + std::to_string(k + 1) + ": " +
                                                         placed->variables[k] + "> = " +
                                                         DescribeImage(env, placed->images[k])));
                  }
                  if (!placed->images.empty()) images.Set(out.name, list);
                } else {
                  prompts.Set(out.name, p.value);
                }
              }
              vars.Set(out.name, Placeholder(out));
            }
            report.Set("prompts", prompts);
            if (images.size() > 0) report.Set("images", images);
            if (ok) {
              auto r = transform.RenderOutput(*row, vars);
              if (r.ok) report.Set("output", r.value);
              else fail(r.error);
            }
          }
        }
        if (json) {
          if (!config->processing.outputs.empty()) report.Set("cached_outputs", cached);
          std::cout << ToJson(report) << "\n";
          continue;
        }
        std::cout << "=== row " << raw.index << (part.split.empty() ? "" : " [" + part.split + "]") << " (" << source
                  << ") ===\n";
        if (const Value* v = report.Find("variables")) {
          std::cout << "variables:\n";
          for (const auto& [k, val] : v->as_object()) std::cout << "  " << k << " = " << ToJson(val) << "\n";
        }
        if (const Value* p = report.Find("prompts")) {
          for (const auto& [k, val] : p->as_object()) {
            std::cout << "prompt of '" << k << "':\n";
            Indent(val.as_string(), "  | ");
            if (const Value* im = report.Find("images")) {
              if (const Value* list = im->Find(k)) {
                for (const auto& line : list->as_array()) std::cout << "  " << line.as_string() << "\n";
              }
            }
          }
        }
        if (const Value* out = report.Find("output")) {
          std::cout << "output row:\n";
          Indent(ToJsonPretty(*out, 2), "  ");
        }
        if (const Value* e = report.Find("error")) std::cout << "ERROR: " << e->as_string() << "\n";
        std::cout << "\n";
      }
    }
  }
  return failures == 0 ? kExitOk : kExitFailure;
}

}  // namespace

Runner RegisterPreview(CLI::App* app) {
  auto o = std::make_shared<Opts>();
  auto* cmd = app->add_subcommand("preview", "Show variables, rendered prompts and output rows of the first rows "
                                             "(no model)");
  AddCommonOptions(cmd, &o->common);
  cmd->add_option("-n,--rows", o->rows, "Rows to show per dataset split (default 3)")->check(CLI::PositiveNumber);
  cmd->add_option("--shard-id", o->shard_id, "Preview this shard's rows")->check(CLI::NonNegativeNumber);
  cmd->add_option("--format", o->format, "text or json (one JSON object per row)")
      ->check(CLI::IsMember({"text", "json"}));
  return [o]() { return Preview(*o); };
}

}  // namespace mmirage::cli
