// RowTransform: the per-row stages that need no model — extract (JMESPath inputs, image paths) and render
// (processing_params.output_schema + remove_columns). Pure functions of the config and the row; a RowTransform
// is immutable and safe to use from many threads.
//
// Every failure is a RowError naming the stage and the reason; the caller records it (errors.jsonl) and goes on.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "data/json.h"
#include "data/value.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::pipeline {

enum class Stage { kRead, kExtract, kRenderPrompt, kGenerate, kRenderOutput };
const char* StageName(Stage s);

struct RowError {
  Stage stage = Stage::kRead;
  std::string message;
};

// Either the value or the error of one stage of one row.
template <typename T>
struct StageResult {
  T value{};
  bool ok = true;
  RowError error;
  static StageResult Fail(Stage s, std::string msg) {
    StageResult r;
    r.ok = false;
    r.error = RowError{s, std::move(msg)};
    return r;
  }
};

class RowTransform {
 public:
  // `image_base_path`: the dataset's base for relative image inputs (may be empty).
  RowTransform(const config::Config* config, Env* env, std::string image_base_path);

  // The variable environment of a row: an object {input name → value}. Errors (stage kExtract): a required
  // input that is null/missing, a JMESPath runtime error, an unresolvable image path, a malformed data: URI.
  // Image values: paths resolve as MMIRAGE resolves them (same error texts); http(s) URLs,
  // data: URIs and bytes pass through; an HF Image struct {"bytes", "path"} passes through with bytes, has its
  // path resolved without, and is a null image when both are null.
  StageResult<Value> Extract(const Value& row) const;

  // True when every input is a field/index path (`a.b[0]`), none is an image, and the output does not keep the
  // row's columns (remove_columns): then a JSONL row need not be built as a Value, and ExtractFromJson reads the
  // variables straight from its text.
  bool ExtractsFromJson() const { return !json_paths_.empty(); }
  // Extract of the row that `text` holds, read from the text: the same variables and errors as ParseJson then
  // Extract, and the read errors (stage kRead) of ProcessRow. REQUIRES: ExtractsFromJson().
  StageResult<Value> ExtractFromJson(std::string_view text) const;

  // The output row: output_schema rendered with `vars` (a plain `{{ var }}` keeps the variable's JSON type, an
  // absent one renders as ""), assembled with the input row's columns per remove_columns. Errors (stage
  // kRenderOutput): a template error (e.g. attribute of an undefined name).
  StageResult<Value> RenderOutput(const Value& row, const Value& vars) const;
  // The same output row, appended to *out as one compact JSON object, without building it as a Value first (the
  // per-row hot path). On error *out is left as it was.
  StageResult<bool> RenderOutputJson(const Value& row, const Value& vars, std::string* out) const;

  // Bytes values in RenderOutputJson's rows are written in the tagged journal form (data/tagged_json.h): for
  // outputs converted to Arrow/Parquet at publish time. Set before sharing the transform.
  void set_tag_bytes(bool on) { tag_bytes_ = on; }

  // cast_images for HF/Parquet outputs: a top-level output_schema column that is exactly
  // `{{ x }}` with x an image_gen output in `path` mode becomes an image value {"bytes": <the file's bytes>,
  // "path": <its file name>} (an HF Image feature, self-contained); null, "" and "none" become null. A file that
  // cannot be read is a row error (stage render_output). Set before sharing the transform.
  void set_cast_images(bool on) { cast_images_ = on && !image_columns_.empty(); }
  const std::vector<std::string>& image_columns() const { return image_columns_; }

  const std::vector<config::OutputVar>& outputs() const { return config_->processing.outputs; }

  // The rendered prompt of output `index` for `vars` (stage kRenderPrompt on error). In `llm` prompts image
  // variables render as their placeholders (process/llm/image_inputs.h: where the prompt places an image).
  StageResult<std::string> RenderPrompt(size_t index, const Value& vars) const;

 private:
  Result<Value> ResolveImage(const Value& v) const;
  // Adds input `in`'s extracted value to *vars (a null one: its default, or an error unless optional; an image
  // resolved). The error message of the stage kExtract failure; "" when added.
  std::string AddInput(const config::InputVar& in, Value v, Value* vars) const;
  Status RenderNodeJson(const config::OutputNode& node, const Value& vars, std::string* out) const;

  const config::Config* config_;
  Env* env_;
  std::string image_base_path_;
  bool unique_input_names_ = true;
  std::vector<std::string> image_names_;  // image variables, sorted
  bool tag_bytes_ = false;
  bool cast_images_ = false;
  std::vector<std::string> image_columns_;   // top-level schema keys cast by cast_images
  std::vector<const JsonPath*> json_paths_;  // the inputs' paths when ExtractsFromJson(), in input order
  // The members' keys of every map node of output_schema as JSON (`"key":`, after a ',' but the first): written
  // once per row each, escaped once here.
  std::unordered_map<const config::OutputNode*, std::vector<std::string>> map_keys_json_;
  void CollectMapKeys(const config::OutputNode& node);
  Status RenderTopMember(const std::string& key, const config::OutputNode& node, const Value& vars,
                         std::string* out) const;
};

}  // namespace mmirage::pipeline
