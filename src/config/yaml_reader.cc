#include "config/yaml_reader.h"

#include <algorithm>
#include <cmath>
#include <regex>

namespace mmirage::config {
namespace {

bool MatchAny(const std::string& s, std::initializer_list<const char*> words) {
  for (const char* w : words) {
    if (s == w) return true;
  }
  return false;
}

bool IsPlain(const YAML::Node& n) { return n.Tag() == "?" || n.Tag().empty(); }

// Levenshtein distance for "did you mean" hints.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// Reports every scalar under `n` that reads as NaN or ±infinity (.nan, .inf): JSON has no such numbers, so a
// request body or a server command carrying one would be invalid. `field` names n in the message.
void CheckFinite(Diag* d, const YAML::Node& n, const std::string& field) {
  if (n.IsScalar()) {
    Value v = ResolveScalar(n);
    if (v.is_double() && !std::isfinite(v.as_double()))
      d->Error(n, field + ": '" + n.Scalar() + "' is not a finite number (JSON has no NaN or Infinity)");
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) CheckFinite(d, n[i], field + "[" + std::to_string(i) + "]");
  } else if (n.IsMap()) {
    for (const auto& kv : n) CheckFinite(d, kv.second, field + "." + (kv.first.IsScalar() ? kv.first.Scalar() : "?"));
  }
}

}  // namespace

std::string Loc::ToString() const { return file + ":" + std::to_string(line) + ":" + std::to_string(col); }

Loc Diag::LocOf(const YAML::Node& n) const {
  Loc loc;
  loc.file = file_;
  if (n.IsDefined()) {
    YAML::Mark m = n.Mark();
    if (!m.is_null()) {
      loc.line = m.line + 1;
      loc.col = m.column + 1;
    }
  }
  if (loc.line == 0) loc.line = 1, loc.col = 1;
  return loc;
}

Value ResolveScalar(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  const std::string& tag = n.Tag();
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return Value(s);
  if (!IsPlain(n)) {
    if (tag == "tag:yaml.org,2002:null") return Value();
    // Other explicit tags: fall through to plain resolution of the text.
  }
  if (MatchAny(s, {"", "~", "null", "Null", "NULL"})) return Value();
  if (MatchAny(s, {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})) return Value(true);
  if (MatchAny(s, {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})) return Value(false);
  static const std::regex kInt(R"(^[-+]?(0|[1-9][0-9_]*)$)");
  static const std::regex kHex(R"(^[-+]?0x[0-9a-fA-F_]+$)");
  static const std::regex kOct(R"(^[-+]?0[0-7_]+$)");
  static const std::regex kFloat(
      R"(^([-+]?([0-9][0-9_]*)?\.[0-9_]*([eE][-+][0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))$)");
  auto strip = [](std::string t) {
    t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
    return t;
  };
  try {
    if (std::regex_match(s, kInt)) {
      std::string t = strip(s);
      errno = 0;
      long long v = std::strtoll(t.c_str(), nullptr, 10);
      if (errno == ERANGE) return Value(std::strtod(t.c_str(), nullptr));
      return Value(static_cast<int64_t>(v));
    }
    if (std::regex_match(s, kHex)) return Value(static_cast<int64_t>(std::strtoll(strip(s).c_str(), nullptr, 16)));
    if (std::regex_match(s, kOct)) return Value(static_cast<int64_t>(std::strtoll(strip(s).c_str(), nullptr, 8)));
    if (std::regex_match(s, kFloat) && s != "." && s != "+." && s != "-.") {
      std::string t = strip(s);
      if (t.find("inf") != std::string::npos || t.find("Inf") != std::string::npos ||
          t.find("INF") != std::string::npos) {
        return Value(t[0] == '-' ? -INFINITY : INFINITY);
      }
      if (t.find("nan") != std::string::npos || t.find("NaN") != std::string::npos ||
          t.find("NAN") != std::string::npos) {
        return Value(std::nan(""));
      }
      return Value(std::strtod(t.c_str(), nullptr));
    }
  } catch (const std::regex_error&) {}
  return Value(s);
}

Value NodeToValue(const YAML::Node& n, const VarLookup& vars) {
  if (!n.IsDefined() || n.IsNull()) {
    if (n.IsDefined() && n.IsScalar()) return ResolveScalar(n);
    return Value();
  }
  if (n.IsScalar()) {
    Value v = ResolveScalar(n);
    if (v.is_string()) return Value(ExpandEnvVars(v.as_string(), vars));
    return v;
  }
  if (n.IsSequence()) {
    Value::Array arr;
    for (const auto& e : n) arr.push_back(NodeToValue(e, vars));
    return Value(std::move(arr));
  }
  Value obj = Value::EmptyObject();
  for (const auto& kv : n) {
    Value k = kv.first.IsScalar() ? ResolveScalar(kv.first) : Value("?");
    std::string key = k.is_string() ? k.as_string() : (k.is_null() ? "None" : kv.first.Scalar());
    obj.Set(key, NodeToValue(kv.second, vars));
  }
  return obj;
}

namespace {
constexpr int kMaxYamlDepth = 200;
constexpr size_t kMaxYamlNodes = 1000000;

// False (with *err set) once a bound is passed.
bool WalkShape(const Diag& diag, const YAML::Node& n, int depth, size_t* nodes, std::string* err) {
  if (++*nodes > kMaxYamlNodes) {
    *err = diag.LocOf(n).ToString() + ": the YAML expands to more than 1000000 nodes (nested aliases?)";
    return false;
  }
  if (!n.IsSequence() && !n.IsMap()) return true;
  if (depth >= kMaxYamlDepth) {
    *err = diag.LocOf(n).ToString() + ": the YAML nests deeper than 200 levels (a recursive alias?)";
    return false;
  }
  const bool map = n.IsMap();
  for (const auto& e : n) {
    bool ok = map ? WalkShape(diag, e.first, depth + 1, nodes, err) && WalkShape(diag, e.second, depth + 1, nodes, err)
                  : WalkShape(diag, e, depth + 1, nodes, err);
    if (!ok) return false;
  }
  return true;
}
}  // namespace

std::string CheckYamlShape(const Diag& diag, const YAML::Node& root) {
  size_t nodes = 0;
  std::string err;
  WalkShape(diag, root, 0, &nodes, &err);
  return err;
}

std::string Describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "null";
  if (n.IsSequence()) return "list";
  if (n.IsMap()) return "map";
  Value v = ResolveScalar(n);
  switch (v.type()) {
    case Value::Type::kNull: return "null";
    case Value::Type::kBool: return std::string("bool ") + (v.as_bool() ? "true" : "false");
    case Value::Type::kInt: return "int " + n.Scalar();
    case Value::Type::kDouble: return "float " + n.Scalar();
    default: return "string '" + n.Scalar() + "'";
  }
}

MapReader::MapReader(Diag* diag, const VarLookup* vars, const YAML::Node& map, std::string section)
    : diag_(diag), vars_(vars), map_(map), section_(std::move(section)) {}

bool MapReader::Has(const char* key) const { return map_.IsMap() && map_[key].IsDefined(); }

YAML::Node MapReader::Get(const char* key) {
  consumed_.insert(key);
  if (!map_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node& m = map_;
  YAML::Node n = m[key];
  // A missing key gives yaml-cpp's "zombie" node, on which IsMap() & co. throw: hand out a plain undefined one.
  if (!n.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
  return n;
}

Loc MapReader::LocOf(const char* key) const {
  if (map_.IsMap()) {
    const YAML::Node& m = map_;
    YAML::Node v = m[key];
    if (v.IsDefined()) return diag_->LocOf(v);
  }
  return diag_->LocOf(map_);
}

bool MapReader::String(const char* key, std::string* out) {
  YAML::Node n = Get(key);
  if (!n.IsDefined()) return false;
  Value v = n.IsScalar() ? ResolveScalar(n) : Value();
  if (!n.IsScalar() || !v.is_string()) {
    diag_->Error(n, Field(key) + ": expected a string, got " + Describe(n));
    return false;
  }
  *out = ExpandEnvVars(v.as_string(), *vars_);
  return true;
}

bool MapReader::OptString(const char* key, std::optional<std::string>* out) {
  YAML::Node n = Get(key);
  if (!n.IsDefined()) return false;
  if (n.IsNull() || (n.IsScalar() && ResolveScalar(n).is_null())) {
    out->reset();
    return true;
  }
  std::string s;
  consumed_.erase(key);
  if (!String(key, &s)) return false;
  *out = std::move(s);
  return true;
}

bool MapReader::Int(const char* key, int64_t* out) {
  YAML::Node n = Get(key);
  if (!n.IsDefined()) return false;
  Value v = n.IsScalar() ? ResolveScalar(n) : Value();
  if (v.is_int()) {
    *out = v.as_int();
    return true;
  }
  if (v.is_bool()) {
    *out = v.as_bool() ? 1 : 0;
    return true;
  }
  diag_->Error(n, Field(key) + ": expected an int, got " + Describe(n));
  return false;
}

bool MapReader::OptInt(const char* key, std::optional<int64_t>* out) {
  YAML::Node n = Get(key);
  if (!n.IsDefined()) return false;
  if (n.IsNull() || (n.IsScalar() && ResolveScalar(n).is_null())) {
    out->reset();
    return true;
  }
  int64_t v = 0;
  consumed_.erase(key);
  if (!Int(key, &v)) return false;
  *out = v;
  return true;
}

bool MapReader::Bool(const char* key, bool* out) {
  YAML::Node n = Get(key);
  if (!n.IsDefined()) return false;
  Value v = n.IsScalar() ? ResolveScalar(n) : Value();
  if (!v.is_bool()) {
    diag_->Error(n, Field(key) + ": expected a bool, got " + Describe(n));
    return false;
  }
  *out = v.as_bool();
  return true;
}

bool MapReader::Double(const char* key, double* out) {
  YAML::Node n = Get(key);
  if (!n.IsDefined()) return false;
  Value v = n.IsScalar() ? ResolveScalar(n) : Value();
  if (!v.is_number() && !v.is_bool()) {
    diag_->Error(n, Field(key) + ": expected a number, got " + Describe(n));
    return false;
  }
  if (v.is_number() && !std::isfinite(v.as_number())) {
    diag_->Error(n, Field(key) + ": '" + n.Scalar() + "' is not a finite number");
    return false;
  }
  *out = v.is_bool() ? (v.as_bool() ? 1.0 : 0.0) : v.as_number();
  return true;
}

bool MapReader::OptDouble(const char* key, std::optional<double>* out) {
  YAML::Node n = Get(key);
  if (!n.IsDefined()) return false;
  if (n.IsNull() || (n.IsScalar() && ResolveScalar(n).is_null())) {
    out->reset();
    return true;
  }
  double v = 0;
  consumed_.erase(key);
  if (!Double(key, &v)) return false;
  *out = v;
  return true;
}

bool MapReader::AnyValue(const char* key, Value* out) {
  YAML::Node n = Get(key);
  if (!n.IsDefined()) return false;
  *out = NodeToValue(n, *vars_);
  return true;
}

bool MapReader::MapValue(const char* key, Value* out) {
  YAML::Node n = Get(key);
  if (!n.IsDefined()) return false;
  if (n.IsNull()) {
    *out = Value::EmptyObject();
    return true;
  }
  if (!n.IsMap()) {
    diag_->Error(n, Field(key) + ": expected a map, got " + Describe(n));
    return false;
  }
  CheckFinite(diag_, n, Field(key));
  *out = NodeToValue(n, *vars_);
  return true;
}

bool MapReader::StringList(const char* key, std::vector<std::string>* out) {
  YAML::Node n = Get(key);
  if (!n.IsDefined()) return false;
  if (!n.IsSequence()) {
    diag_->Error(n, Field(key) + ": expected a list of strings, got " + Describe(n));
    return false;
  }
  std::vector<std::string> items;
  bool ok = true;
  for (const auto& e : n) {
    Value v = e.IsScalar() ? ResolveScalar(e) : Value();
    if (!v.is_string()) {
      diag_->Error(e, Field(key) + ": expected a string list item, got " + Describe(e));
      ok = false;
      continue;
    }
    items.push_back(ExpandEnvVars(v.as_string(), *vars_));
  }
  if (ok) *out = std::move(items);
  return ok;
}

bool MapReader::Literal(const char* key, const std::vector<std::string>& allowed, std::string* out) {
  std::string v;
  if (!String(key, &v)) return false;
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "'" : ", '") + a + "'";
    diag_->Error(LocOf(key), Field(key) + ": invalid value '" + v + "'; expected one of " + list);
    return false;
  }
  *out = v;
  return true;
}

void MapReader::Finish() {
  if (!map_.IsMap()) return;
  for (const auto& kv : map_) {
    std::string k = kv.first.Scalar();
    if (consumed_.count(k)) continue;
    std::string hint;
    size_t best = 3;
    for (const auto& c : consumed_) {
      size_t d = EditDistance(k, c);
      if (d < best) best = d, hint = c;
    }
    std::string where = section_.empty() ? "at top level" : "in " + section_;
    diag_->Warn(kv.first, "unknown key '" + k + "' " + where + " (ignored)" +
                              (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
  }
}

}  // namespace mmirage::config
