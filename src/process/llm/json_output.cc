#include "process/llm/json_output.h"

#include <cmath>

#include "data/json.h"

namespace mmirage::process::llm {
namespace {

const char* SchemaType(config::FieldType t) {
  switch (t) {
    case config::FieldType::kString: return "string";
    case config::FieldType::kInt: return "integer";
    case config::FieldType::kNumber: return "number";
    case config::FieldType::kBool: return "boolean";
  }
  return "string";
}

Value Bound(double x, config::FieldType t) {
  if (t == config::FieldType::kInt) return Value(static_cast<int64_t>(x));
  return Value(x);
}

std::string_view Strip(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string BuildJsonSchema(const std::vector<config::SchemaField>& fields) {
  Value props = Value::EmptyObject();
  Value required = Value::EmptyArray();
  for (const auto& f : fields) {
    Value p = Value::EmptyObject();
    p.Set("type", SchemaType(f.type));
    if (f.min) p.Set("minimum", Bound(*f.min, f.type));
    if (f.max) p.Set("maximum", Bound(*f.max, f.type));
    props.Set(f.name, p);
    required.Push(f.name);
  }
  Value schema = Value::EmptyObject();
  schema.Set("type", "object");
  schema.Set("properties", props);
  schema.Set("required", required);
  schema.Set("additionalProperties", false);
  return ToJson(schema);
}

Result<Value> CheckJsonOutput(std::string_view text, const std::vector<config::SchemaField>& fields) {
  auto parsed = ParseJson(Strip(text));
  if (!parsed.ok()) {
    std::string head(text.substr(0, 200));
    return Status::InvalidArgument("output is not valid JSON (" + parsed.status().message() +
                                   "): " + ToJson(Value(head)));
  }
  if (!parsed->is_object()) {
    return Status::InvalidArgument(std::string("output is a JSON ") + parsed->TypeName() + ", expected an object");
  }
  Value out = Value::EmptyObject();
  for (const auto& f : fields) {
    const Value* v = parsed->Find(f.name);
    if (v == nullptr) return Status::InvalidArgument("field '" + f.name + "' is missing");
    bool ok = false;
    switch (f.type) {
      case config::FieldType::kString: ok = v->is_string(); break;
      case config::FieldType::kBool: ok = v->is_bool(); break;
      case config::FieldType::kNumber: ok = v->is_number(); break;
      case config::FieldType::kInt:
        ok = v->is_int() ||
             (v->is_double() && std::floor(v->as_double()) == v->as_double() && std::fabs(v->as_double()) < 9e15);
        break;
    }
    if (!ok) {
      return Status::InvalidArgument("field '" + f.name + "' must be " +
                                     (f.type == config::FieldType::kInt ? "an " : "a ") + SchemaType(f.type) +
                                     ", got " + ToJson(*v));
    }
    Value value =
        (f.type == config::FieldType::kInt && v->is_double()) ? Value(static_cast<int64_t>(v->as_double())) : *v;
    if (value.is_number()) {
      double x = value.as_number();
      if (f.min && x < *f.min)
        return Status::InvalidArgument("field '" + f.name + "' = " + ToJson(value) + " is below the minimum " +
                                       ToJson(Bound(*f.min, f.type)));
      if (f.max && x > *f.max)
        return Status::InvalidArgument("field '" + f.name + "' = " + ToJson(value) + " is above the maximum " +
                                       ToJson(Bound(*f.max, f.type)));
    }
    out.Set(f.name, std::move(value));
  }
  return out;
}

}  // namespace mmirage::process::llm
