// processing_params: inputs (JMESPath), outputs (prompts, JSON schemas), output_schema (templates).
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <regex>

#include "config/validate.h"
#include "data/json.h"
#include "util/parse_int.h"

namespace mmirage::config {
namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Location of line `tmpl_line` (1-based) of the template held by scalar node n.
Loc TemplateLoc(Diag* d, const YAML::Node& n, const std::string& yaml, int tmpl_line) {
  Loc loc = d->LocOf(n);
  // Find the text at the mark: a block scalar starts with '|' or '>' and its content begins on the next line.
  size_t pos = 0;
  for (int l = 1; l < loc.line && pos != std::string::npos; ++l) {
    pos = yaml.find('\n', pos);
    if (pos != std::string::npos) ++pos;
  }
  if (pos == std::string::npos) return loc;
  size_t at = pos + static_cast<size_t>(loc.col - 1);
  bool block = at < yaml.size() && (yaml[at] == '|' || yaml[at] == '>');
  if (block) {
    loc.line += tmpl_line;
    size_t line_start = pos;
    for (int l = 0; l < tmpl_line && line_start != std::string::npos; ++l) {
      line_start = yaml.find('\n', line_start);
      if (line_start != std::string::npos) ++line_start;
    }
    int indent = 0;
    while (line_start != std::string::npos && line_start + indent < yaml.size() && yaml[line_start + indent] == ' ')
      ++indent;
    loc.col = indent + 1;
  } else {
    loc.line += tmpl_line - 1;
  }
  return loc;
}

// Parses a template held by scalar node n; reports a located error and returns nullopt on failure.
std::optional<tmpl::Template> ParseTemplate(Diag* d, const YAML::Node& n, const std::string& yaml,
                                            const std::string& field, const std::string& source) {
  auto parsed = tmpl::Template::ParseLocated(source);
  if (auto* t = std::get_if<tmpl::Template>(&parsed)) return std::move(*t);
  const tmpl::TemplateError& e = std::get<tmpl::TemplateError>(parsed);
  Loc loc = n.IsDefined() ? TemplateLoc(d, n, yaml, e.line) : d->LocOf(n);
  d->Error(loc, field + ": invalid Jinja template: " + e.message);
  return std::nullopt;
}

std::optional<FieldType> ParseFieldType(const std::string& raw) {
  std::string t;
  for (char c : Trim(raw)) t.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (t == "str" || t == "string") return FieldType::kString;
  if (t == "int" || t == "integer") return FieldType::kInt;
  if (t == "float" || t == "number") return FieldType::kNumber;
  if (t == "bool" || t == "boolean") return FieldType::kBool;
  return std::nullopt;
}

std::string PyRepr(const YAML::Node& n) {
  Value v = n.IsScalar() ? ResolveScalar(n) : Value();
  if (v.is_string()) return "'" + v.as_string() + "'";
  if (v.is_bool()) return v.as_bool() ? "True" : "False";
  if (n.IsSequence()) return "[...]";
  if (n.IsMap()) return "{...}";
  return n.Scalar();
}

// One bound (min/max) of a nested field spec: a number, or a string that reads as one, matching the field's type.
// Returns false after reporting an error.
bool ReadBound(Diag* d, const YAML::Node& b, const std::string& which, FieldType type, const std::string& prefix,
               const VarLookup& vars, std::optional<double>* out) {
  if (!b.IsDefined() || b.IsNull()) return true;
  Value v = b.IsScalar() ? ResolveScalar(b) : Value("?");
  double x = 0;
  bool fractional = false;
  if (v.is_string()) {
    std::string s = Trim(ExpandEnvVars(v.as_string(), vars));
    static const std::regex kNum(R"(^-?\d+(\.\d+)?$)");
    if (!b.IsScalar() || !std::regex_match(s, kNum)) {
      d->Error(b, prefix + "'" + which + "' must be a number, got " + PyRepr(b) + ".");
      return false;
    }
    x = std::strtod(s.c_str(), nullptr);
    fractional = s.find('.') != std::string::npos && x != static_cast<double>(static_cast<int64_t>(x));
    if (s.find('.') != std::string::npos && type == FieldType::kInt) fractional = true;
  } else if (v.is_int()) {
    x = static_cast<double>(v.as_int());
  } else if (v.is_double()) {
    x = v.as_double();
    fractional = x != static_cast<double>(static_cast<int64_t>(x));
  } else {
    d->Error(b, prefix + "'" + which + "' must be a number, got " + PyRepr(b) + ".");
    return false;
  }
  if (type == FieldType::kInt && fractional) {
    d->Error(b, prefix + "'" + which + "' must be a whole number for an int field, got " + PyRepr(b) + ".");
    return false;
  }
  *out = x;
  return true;
}

void ReadSchema(Diag* d, const VarLookup& vars, const YAML::Node& n, OutputVar* o) {
  const std::vector<std::string> kTypeNames = {"bool", "boolean", "float", "int", "integer", "number", "str", "string"};
  std::string type_list;
  for (const auto& t : kTypeNames) type_list += (type_list.empty() ? "'" : ", '") + t + "'";
  if (n.IsSequence()) {
    for (const auto& e : n) {
      Value v = e.IsScalar() ? ResolveScalar(e) : Value();
      if (!v.is_string()) {
        d->Error(e, "output '" + o->name + "': output_schema list items must be field names, got " + Describe(e));
        continue;
      }
      o->schema.push_back(SchemaField{v.as_string(), FieldType::kString, std::nullopt, std::nullopt});
    }
    return;
  }
  if (!n.IsMap()) {
    d->Error(n, "output '" + o->name + "': output_schema must be a list of field names or a map, got " + Describe(n));
    return;
  }
  for (const auto& kv : n) {
    std::string field = kv.first.Scalar();
    std::string prefix = "Field '" + field + "' in output_schema of '" + o->name + "': ";
    SchemaField f;
    f.name = field;
    const YAML::Node& spec = kv.second;
    if (spec.IsScalar()) {
      Value v = ResolveScalar(spec);
      std::string t = v.is_string() ? v.as_string() : spec.Scalar();
      auto ft = ParseFieldType(t);
      if (!ft) {
        d->Error(spec, prefix + "Unsupported type '" + t + "'. Supported types: [" + type_list + "].");
        continue;
      }
      f.type = *ft;
    } else if (spec.IsMap()) {
      std::vector<std::string> unknown;
      for (const auto& s : spec) {
        std::string k = s.first.Scalar();
        if (k != "type" && k != "min" && k != "max") unknown.push_back("'" + k + "'");
      }
      std::sort(unknown.begin(), unknown.end());
      if (!unknown.empty()) {
        std::string list;
        for (const auto& u : unknown) list += (list.empty() ? "" : ", ") + u;
        d->Error(spec, prefix + "Unknown key(s) [" + list + "]. Allowed keys: ['max', 'min', 'type'].");
        continue;
      }
      if (!spec["type"].IsDefined()) {
        d->Error(spec, prefix + "missing required key 'type'.");
        continue;
      }
      std::string t = spec["type"].Scalar();
      auto ft = ParseFieldType(t);
      if (!ft) {
        d->Error(spec["type"], prefix + "Unsupported type '" + t + "'. Supported types: [" + type_list + "].");
        continue;
      }
      f.type = *ft;
      YAML::Node mn = spec["min"], mx = spec["max"];
      bool has_min = mn.IsDefined() && !mn.IsNull() && !(mn.IsScalar() && ResolveScalar(mn).is_null());
      bool has_max = mx.IsDefined() && !mx.IsNull() && !(mx.IsScalar() && ResolveScalar(mx).is_null());
      if (has_min || has_max) {
        if (f.type != FieldType::kInt && f.type != FieldType::kNumber) {
          d->Error(spec, prefix + "'min'/'max' are only allowed for numeric types, got type '" + t + "'.");
          continue;
        }
        if (has_min && !ReadBound(d, mn, "min", f.type, prefix, vars, &f.min)) continue;
        if (has_max && !ReadBound(d, mx, "max", f.type, prefix, vars, &f.max)) continue;
        if (f.min && f.max && *f.min > *f.max) {
          auto num = [&](double x) {
            return f.type == FieldType::kInt ? std::to_string(static_cast<int64_t>(x)) : FormatDouble(x);
          };
          d->Error(spec, prefix + "min " + num(*f.min) + " cannot be greater than max " + num(*f.max) + ".");
          continue;
        }
      }
    } else {
      d->Error(spec, prefix + "expected a type name or a {type, min, max} map, got " + Describe(spec));
      continue;
    }
    o->schema.push_back(std::move(f));
  }
}

void ReadInputs(Diag* d, const VarLookup& vars, const YAML::Node& list, ProcessingParams* pp) {
  if (!list.IsSequence()) {
    d->Error(list, "processing_params.inputs: expected a list, got " + Describe(list));
    return;
  }
  int i = 0;
  for (const auto& node : list) {
    std::string sec = "processing_params.inputs[" + std::to_string(i++) + "]";
    if (!node.IsMap()) {
      d->Error(node, sec + ": expected a map, got " + Describe(node));
      continue;
    }
    MapReader r(d, &vars, node, sec);
    InputVar in;
    in.loc = d->LocOf(node);
    r.String("name", &in.name);
    if (in.name.empty()) d->Error(r.LocOf("name"), sec + ": an input needs a non-empty 'name'");
    r.String("key", &in.key);
    std::string type = "text";
    r.Literal("type", {"text", "image"}, &type);
    in.image = type == "image";
    r.Bool("optional", &in.optional);
    Value def;
    if (r.AnyValue("default", &def)) in.default_value = def;
    if (in.key.empty()) {
      d->Error(r.LocOf("key"), sec + ": input '" + in.name + "' needs a non-empty JMESPath 'key'");
    } else {
      auto e = query::Expression::Compile(in.key);
      if (e.ok()) {
        in.expr = std::move(*e);
      } else {
        Loc loc = r.LocOf("key");
        int col = query::ErrorColumnOf(e.status());
        YAML::Node kn = r.Get("key");
        bool quoted = kn.Tag() == "!";
        if (col > 0) loc.col += col - 1 + (quoted ? 1 : 0);
        d->Error(loc, sec + ": invalid JMESPath key '" + in.key + "': " + e.status().message());
      }
    }
    r.Finish();
    pp->inputs.push_back(std::move(in));
  }
}

void ReadOutputs(Diag* d, const VarLookup& vars, const std::string& yaml, const YAML::Node& list,
                 ProcessingParams* pp) {
  if (!list.IsSequence()) {
    d->Error(list, "processing_params.outputs: expected a list, got " + Describe(list));
    return;
  }
  int i = 0;
  for (const auto& node : list) {
    std::string sec = "processing_params.outputs[" + std::to_string(i++) + "]";
    if (!node.IsMap()) {
      d->Error(node, sec + ": expected a map, got " + Describe(node));
      continue;
    }
    MapReader r(d, &vars, node, sec);
    OutputVar o;
    o.loc = d->LocOf(node);
    r.String("name", &o.name);
    if (o.name.empty()) d->Error(o.loc, sec + ": an output needs a non-empty 'name'");
    if (!r.Has("type")) {
      d->Error(node, sec + ": missing required key 'type'");
      continue;
    }
    if (!r.String("type", &o.type)) continue;
    if (o.type != "llm" && o.type != "batch_api" && o.type != "image_gen" && o.type != "custom") {
      d->Error(r.LocOf("type"), sec + ": Processor " + o.type +
                                    " not registered. Available processors are ['llm', 'batch_api', 'image_gen', "
                                    "'custom']");
      continue;
    }
    if (o.type == "llm" || o.type == "batch_api" || o.type == "image_gen") {
      if (r.String("prompt", &o.prompt))
        o.prompt_tmpl = ParseTemplate(d, r.Get("prompt"), yaml, sec + ".prompt", o.prompt);
      else o.prompt_tmpl = ParseTemplate(d, YAML::Node(), yaml, sec + ".prompt", o.prompt);
    }
    if (o.type == "llm" || o.type == "batch_api") {
      r.String("output_type", &o.output_type);
      o.json = o.output_type == "JSON";
      if (!o.json && !o.output_type.empty()) {
        std::string lower;
        for (char c : o.output_type) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
        if (lower == "json")
          d->Warn(r.LocOf("output_type"),
                  sec + ": output_type '" + o.output_type + "' means plain text; write exactly 'JSON' for JSON output");
      }
      YAML::Node sn = r.Get("output_schema");
      if (sn.IsDefined() && !sn.IsNull()) {
        if (o.type == "batch_api" && !sn.IsSequence()) {
          d->Error(sn, sec + ".output_schema: a batch_api output takes a list of field names, got " + Describe(sn));
        } else if (o.json || o.type == "batch_api") {
          ReadSchema(d, vars, sn, &o);
        } else {
          d->Warn(sn, sec + ": output_schema is ignored because output_type is not 'JSON'");
        }
      }
      if (o.type == "llm" && r.Int("generation_retries", &o.generation_retries) && o.generation_retries < 0)
        d->Error(r.LocOf("generation_retries"), sec + ": generation_retries must be >= 0");
      if (o.type == "llm" && o.json && o.schema.empty() && !(sn.IsDefined() && sn.size() > 0))
        d->Error(r.LocOf("output_type"),
                 sec + ": Output variable " + o.name + " has output_type=JSON but no output_schema defined.");
    }
    if (o.type == "image_gen") {
      if (r.String("negative_prompt", &o.negative_prompt) && !o.negative_prompt.empty())
        o.negative_prompt_tmpl =
            ParseTemplate(d, r.Get("negative_prompt"), yaml, sec + ".negative_prompt", o.negative_prompt);
      r.Literal("output_mode", {"path", "pil"}, &o.output_mode);
      r.String("filename_template", &o.filename_template);
      o.filename_tmpl =
          ParseTemplate(d, r.Get("filename_template"), yaml, sec + ".filename_template", o.filename_template);
      r.OptInt("width", &o.width);
      r.OptInt("height", &o.height);
      r.OptInt("num_inference_steps", &o.num_inference_steps);
      r.OptDouble("guidance_scale", &o.guidance_scale);
      r.OptInt("seed", &o.seed);
    }
    r.Finish();
    pp->outputs.push_back(std::move(o));
  }
}

OutputNode ReadOutputNode(Diag* d, const VarLookup& vars, const std::string& yaml, const YAML::Node& n,
                          const std::string& path) {
  OutputNode out;
  out.loc = d->LocOf(n);
  if (n.IsMap()) {
    out.kind = OutputNode::Kind::kMap;
    for (const auto& kv : n) {
      std::string k = kv.first.Scalar();
      out.members.emplace_back(k, ReadOutputNode(d, vars, yaml, kv.second, path + "." + k));
    }
  } else if (n.IsSequence()) {
    out.kind = OutputNode::Kind::kList;
    int i = 0;
    for (const auto& e : n)
      out.items.push_back(ReadOutputNode(d, vars, yaml, e, path + "[" + std::to_string(i++) + "]"));
  } else {
    Value v = (n.IsDefined() && n.IsScalar()) ? ResolveScalar(n) : Value();
    if (v.is_string()) {
      std::string src = ExpandEnvVars(v.as_string(), vars);
      out.kind = OutputNode::Kind::kTemplate;
      out.tmpl = ParseTemplate(d, n, yaml, path, src);
      if (out.tmpl) out.plain_var = out.tmpl->PlainVariable();
      // A template that reads no variable renders the same text for every row: render it once here.
      if (out.tmpl && out.tmpl->UndeclaredVariables().empty()) {
        auto text = out.tmpl->Render(Value::EmptyObject());
        if (text.ok()) {
          out.kind = OutputNode::Kind::kConst;
          out.constant = Value(std::move(*text));
        }
      }
    } else {
      out.kind = OutputNode::Kind::kConst;
      out.constant = v;
    }
  }
  return out;
}

}  // namespace

void ReadProcessing(Diag* d, const VarLookup& vars, const std::string& yaml, const YAML::Node& node, Config* c) {
  if (!node.IsMap()) {
    d->Error(node, "processing_params: expected a map, got " + Describe(node));
    return;
  }
  ProcessingParams& pp = c->processing;
  MapReader r(d, &vars, node, "processing_params");
  for (const char* req : {"inputs", "outputs", "output_schema"}) {
    if (!r.Has(req)) d->Error(node, std::string("processing_params: missing required key '") + req + "'");
  }
  if (r.Has("inputs")) ReadInputs(d, vars, r.Get("inputs"), &pp);
  if (r.Has("outputs")) ReadOutputs(d, vars, yaml, r.Get("outputs"), &pp);
  YAML::Node os = r.Get("output_schema");
  if (os.IsDefined()) {
    if (!os.IsMap()) d->Error(os, "processing_params.output_schema: expected a map, got " + Describe(os));
    else pp.output_schema = ReadOutputNode(d, vars, yaml, os, "processing_params.output_schema");
  }
  r.Bool("remove_columns", &pp.remove_columns);
  r.Bool("cast_images", &pp.cast_images);
  r.Literal("order", {"input", "prefix"}, &pp.order);
  r.Finish();
}

}  // namespace mmirage::config
