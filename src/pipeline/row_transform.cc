#include "pipeline/row_transform.h"

#include "data/tagged_json.h"

#include "data/json.h"
#include "process/llm/image_inputs.h"

namespace mmirage::pipeline {

const char* StageName(Stage s) {
  switch (s) {
    case Stage::kRead: return "read";
    case Stage::kExtract: return "extract";
    case Stage::kRenderPrompt: return "render_prompt";
    case Stage::kGenerate: return "generate";
    case Stage::kRenderOutput: return "render_output";
  }
  return "read";
}

RowTransform::RowTransform(const config::Config* config, Env* env, std::string image_base_path)
    : config_(config), env_(env), image_base_path_(std::move(image_base_path)) {
  const auto& inputs = config_->processing.inputs;
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (inputs[i].name == inputs[j].name) unique_input_names_ = false;
  image_names_ = process::llm::ImageVariableNames(*config_);
  CollectMapKeys(config_->processing.output_schema);
  if (config_->processing.remove_columns) {
    std::vector<const JsonPath*> paths;
    for (const auto& in : inputs) {
      const JsonPath* p = in.expr && !in.image ? in.expr->FieldPath() : nullptr;
      if (p == nullptr) break;
      paths.push_back(p);
    }
    if (!inputs.empty() && paths.size() == inputs.size()) json_paths_ = std::move(paths);
  }
  // Image columns (cast_images): plain references to image_gen outputs in path mode, top level only.
  const auto& schema = config_->processing.output_schema;
  if (schema.kind == config::OutputNode::Kind::kMap) {
    for (const auto& [k, node] : schema.members) {
      if (node.kind != config::OutputNode::Kind::kTemplate || !node.plain_var) continue;
      for (const auto& o : config_->processing.outputs)
        if (o.name == *node.plain_var && o.type == "image_gen" && o.output_mode == "path") image_columns_.push_back(k);
    }
  }
}

void RowTransform::CollectMapKeys(const config::OutputNode& node) {
  if (node.kind == config::OutputNode::Kind::kMap) {
    std::vector<std::string>& keys = map_keys_json_[&node];
    for (size_t i = 0; i < node.members.size(); ++i) {
      std::string k = i > 0 ? "," : "";
      AppendJsonString(node.members[i].first, &k);
      k.push_back(':');
      keys.push_back(std::move(k));
      CollectMapKeys(node.members[i].second);
    }
  }
  for (const auto& item : node.items) CollectMapKeys(item);
}

Status RowTransform::RenderTopMember(const std::string& key, const config::OutputNode& node, const Value& vars,
                                     std::string* out) const {
  bool is_image = false;
  if (cast_images_)
    for (const auto& c : image_columns_) is_image = is_image || c == key;
  if (!is_image) return RenderNodeJson(node, vars, out);
  const Value* v = vars.Find(*node.plain_var);
  std::string lowered;
  if (v != nullptr && v->is_string()) {
    for (char ch : v->as_string())
      if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
        lowered.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  }
  if (v == nullptr || v->is_null() || (v->is_string() && (lowered.empty() || lowered == "none"))) {
    out->append("null");
    return Status::OK();
  }
  if (!v->is_string()) {  // already an image value
    if (tag_bytes_) AppendJsonTagged(*v, out);
    else AppendJson(*v, out);
    return Status::OK();
  }
  auto bytes = env_->ReadFileToString(v->as_string());
  if (!bytes.ok()) return bytes.status().WithContext("cast_images: column '" + key + "'");
  Value image = Value::EmptyObject();
  image.Set("bytes", Value::Bytes(std::move(*bytes)));
  image.Set("path", Basename(v->as_string()));
  if (tag_bytes_) AppendJsonTagged(image, out);
  else AppendJson(image, out);
  return Status::OK();
}

std::string RowTransform::AddInput(const config::InputVar& in, Value v, Value* vars) const {
  if (v.is_null()) {
    if (in.default_value) {
      v = *in.default_value;
    } else if (!in.optional) {
      return "Input variable '" + in.name + "' with key '" + in.key + "' not found in the sample.";
    }
  }
  if (in.image && !v.is_null()) {
    auto img = ResolveImage(v);
    if (!img.ok()) return "input '" + in.name + "': " + img.status().message();
    v = std::move(*img);
  }
  if (unique_input_names_) vars->mutable_object().emplace_back(in.name, std::move(v));
  else vars->Set(in.name, std::move(v));  // a later input of the same name wins
  return "";
}

StageResult<Value> RowTransform::Extract(const Value& row) const {
  Value vars(Value::Object{});
  vars.mutable_object().reserve(config_->processing.inputs.size());
  for (const auto& in : config_->processing.inputs) {
    auto r = in.expr->Evaluate(row);
    if (!r.ok()) {
      return StageResult<Value>::Fail(Stage::kExtract,
                                      "input '" + in.name + "' (key '" + in.key + "'): " + r.status().message());
    }
    if (std::string err = AddInput(in, std::move(*r), &vars); !err.empty()) {
      return StageResult<Value>::Fail(Stage::kExtract, std::move(err));
    }
  }
  StageResult<Value> out;
  out.value = std::move(vars);
  return out;
}

StageResult<Value> RowTransform::ExtractFromJson(std::string_view text) const {
  const char* root_type = "";
  auto values = ParseJsonPaths(text, json_paths_, &root_type);
  if (!values.ok()) return StageResult<Value>::Fail(Stage::kRead, values.status().message());
  if (std::string_view(root_type) != "object") {
    return StageResult<Value>::Fail(Stage::kRead, std::string("row is a JSON ") + root_type + ", expected an object");
  }
  const auto& inputs = config_->processing.inputs;
  Value vars(Value::Object{});
  vars.mutable_object().reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (std::string err = AddInput(inputs[i], std::move((*values)[i]), &vars); !err.empty()) {
      return StageResult<Value>::Fail(Stage::kExtract, std::move(err));
    }
  }
  StageResult<Value> out;
  out.value = std::move(vars);
  return out;
}

// Image paths resolve as MMIRAGE resolves them (same error texts); data: URIs, bytes and HF Image structs
// {"bytes", "path"} are accepted too.
Result<Value> RowTransform::ResolveImage(const Value& v) const {
  if (v.is_bytes()) return v;  // the bytes of an image file
  if (v.is_object() && (v.Find("bytes") != nullptr || v.Find("path") != nullptr)) {
    const Value* b = v.Find("bytes");
    const Value* p = v.Find("path");
    if (b != nullptr && !b->is_null()) return v;       // the bytes are the image (path is informative)
    if (p == nullptr || p->is_null()) return Value();  // a null struct is a null image
    if (!p->is_string())
      return Status::InvalidArgument(std::string("image struct 'path' must be a string, got ") + p->TypeName());
    MMIRAGE_ASSIGN_OR_RETURN(Value resolved, ResolveImage(*p));
    Value out = v;
    out.Set("path", std::move(resolved));
    return out;
  }
  if (!v.is_string()) return v;
  std::string s = v.as_string();
  if (s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0) return v;
  if (s.rfind("data:", 0) == 0) {
    Result<std::string> bytes = process::llm::DecodeDataUri(s);
    if (!bytes.ok()) return bytes.status();
    if (bytes->empty()) return Status::InvalidArgument("data: URI holds no bytes");
    return v;
  }
  if (s.rfind("file://", 0) == 0) s = s.substr(7);
  if (!s.empty() && s[0] == '/') {
    std::string p = s;
    if (auto real = env_->RealPath(s); real.ok()) p = *real;
    if (!env_->FileExists(p)) return Status::NotFound("Absolute image path does not exist: " + p);
    if (!env_->IsRegularFile(p)) return Status::InvalidArgument("The provided path exists but is not a file: " + p);
    return Value(env_->AbsolutePath(p));
  }
  if (!image_base_path_.empty()) {
    std::string p = env_->AbsolutePath(JoinPath(image_base_path_, s));
    if (!env_->FileExists(p)) {
      return Status::NotFound("Resolved image path '" + p + "' does not exist (base='" + image_base_path_ + "', rel='" +
                              s + "').");
    }
    if (!env_->IsRegularFile(p)) return Status::InvalidArgument("Resolved image path is not a file: " + p);
    return Value(p);
  }
  std::string p = env_->AbsolutePath(s);
  if (env_->FileExists(p)) {
    if (!env_->IsRegularFile(p)) return Status::InvalidArgument("Resolved image path is not a file: " + p);
    return Value(p);
  }
  return Status::NotFound("Relative image path '" + s +
                          "' cannot be resolved. Set image_base_path in the dataset configuration or use an "
                          "absolute path.");
}

StageResult<std::string> RowTransform::RenderPrompt(size_t index, const Value& vars) const {
  const auto& o = config_->processing.outputs[index];
  if (!o.prompt_tmpl) return StageResult<std::string>{};  // custom outputs have no prompt
  auto r = image_names_.empty() || o.type != "llm"
               ? o.prompt_tmpl->Render(vars)
               : o.prompt_tmpl->Render(process::llm::WithImagePlaceholders(vars, image_names_));
  if (!r.ok()) {
    return StageResult<std::string>::Fail(Stage::kRenderPrompt,
                                          "output '" + o.name + "' prompt: " + r.status().message());
  }
  StageResult<std::string> out;
  out.value = std::move(*r);
  return out;
}

Status RowTransform::RenderNodeJson(const config::OutputNode& node, const Value& vars, std::string* out) const {
  using Kind = config::OutputNode::Kind;
  switch (node.kind) {
    case Kind::kConst: AppendJson(node.constant, out); return Status::OK();
    case Kind::kMap: {
      out->push_back('{');
      auto keys = map_keys_json_.find(&node);  // every map node of the schema is there (CollectMapKeys)
      for (size_t i = 0; i < node.members.size(); ++i) {
        if (keys != map_keys_json_.end()) {
          out->append(keys->second[i]);
        } else {
          if (i > 0) out->push_back(',');
          AppendJsonString(node.members[i].first, out);
          out->push_back(':');
        }
        MMIRAGE_TRY(RenderNodeJson(node.members[i].second, vars, out));
      }
      out->push_back('}');
      return Status::OK();
    }
    case Kind::kList: {
      out->push_back('[');
      for (size_t i = 0; i < node.items.size(); ++i) {
        if (i > 0) out->push_back(',');
        MMIRAGE_TRY(RenderNodeJson(node.items[i], vars, out));
      }
      out->push_back(']');
      return Status::OK();
    }
    case Kind::kTemplate: {
      // A plain `{{ var }}` keeps the variable's JSON type, whatever it is, so a number stays a number in the
      // output row. An absent variable renders as "".
      if (node.plain_var) {
        if (const Value* v = vars.Find(*node.plain_var)) {
          if (tag_bytes_) AppendJsonTagged(*v, out);
          else AppendJson(*v, out);
          return Status::OK();
        }
      }
      thread_local std::string text;  // one buffer per worker thread, reused by every render
      text.clear();
      MMIRAGE_TRY(node.tmpl->RenderTo(vars, &text));
      AppendJsonString(text, out);
      if (text.capacity() > (size_t{1} << 20)) std::string().swap(text);  // a huge row's buffer is not kept
      return Status::OK();
    }
  }
  return Status::OK();
}

StageResult<bool> RowTransform::RenderOutputJson(const Value& row, const Value& vars, std::string* out) const {
  const auto& pp = config_->processing;
  const size_t mark = out->size();
  auto fail = [&](const Status& st) {
    out->resize(mark);
    return StageResult<bool>::Fail(Stage::kRenderOutput, st.message());
  };
  if ((pp.remove_columns || !row.is_object()) && cast_images_) {
    out->push_back('{');
    bool first = true;
    for (const auto& [k, child] : pp.output_schema.members) {
      if (!first) out->push_back(',');
      first = false;
      AppendJsonString(k, out);
      out->push_back(':');
      if (Status st = RenderTopMember(k, child, vars, out); !st.ok()) return fail(st);
    }
    out->push_back('}');
    StageResult<bool> r;
    r.value = true;
    return r;
  }
  if (pp.remove_columns || !row.is_object()) {
    Status st = RenderNodeJson(pp.output_schema, vars, out);
    if (!st.ok()) return fail(st);
    StageResult<bool> r;
    r.value = true;
    return r;
  }
  // Original columns in order (a schema key replaces its column in place), then the new schema columns.
  const auto& members = pp.output_schema.members;
  out->push_back('{');
  bool first = true;
  for (const auto& [k, v] : row.as_object()) {
    if (!first) out->push_back(',');
    first = false;
    AppendJsonString(k, out);
    out->push_back(':');
    const config::OutputNode* replacement = nullptr;
    for (const auto& m : members) {
      if (m.first == k) replacement = &m.second;
    }
    if (replacement == nullptr) {
      if (tag_bytes_) AppendJsonTagged(v, out);
      else AppendJson(v, out);
    } else if (Status st = RenderTopMember(k, *replacement, vars, out); !st.ok()) {
      return fail(st);
    }
  }
  for (const auto& [k, child] : members) {
    if (row.Find(k) != nullptr) continue;
    if (!first) out->push_back(',');
    first = false;
    AppendJsonString(k, out);
    out->push_back(':');
    if (Status st = RenderTopMember(k, child, vars, out); !st.ok()) return fail(st);
  }
  out->push_back('}');
  StageResult<bool> r;
  r.value = true;
  return r;
}

StageResult<Value> RowTransform::RenderOutput(const Value& row, const Value& vars) const {
  // One implementation of the output rules (RenderOutputJson); this Value form serves preview, off the hot path.
  std::string json;
  auto r = RenderOutputJson(row, vars, &json);
  if (!r.ok) return StageResult<Value>::Fail(r.error.stage, r.error.message);
  auto v = ParseJson(json);
  if (!v.ok()) return StageResult<Value>::Fail(Stage::kRenderOutput, v.status().message());
  StageResult<Value> out;
  out.value = std::move(*v);
  return out;
}

}  // namespace mmirage::pipeline
