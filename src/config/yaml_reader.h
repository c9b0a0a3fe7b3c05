// Reading YAML (yaml-cpp) into typed fields with located diagnostics. Internal to config/: YAML nodes never
// leave this folder.
//
// Scalars are resolved like PyYAML's safe loader (YAML 1.1: yes/no/on/off are booleans, `1e3` is a string,
// quoted scalars are always strings). Every string *value* is passed through ${ENV} expansion when read.
// Types are checked, not coerced (a quoted "3" is not an int), as Python's dacite conversion does; an
// int is accepted for a float and a bool for an int. Errors and warnings are collected in a Diag, each with its
// FILE:LINE:COL. Thread-safety: a Diag and a MapReader are used by one thread.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"

namespace mmirage::config {

class Diag {
 public:
  explicit Diag(std::string file) : file_(std::move(file)) {}
  Loc LocOf(const YAML::Node& n) const;
  void Error(const Loc& loc, const std::string& msg) { errors.push_back(loc.ToString() + ": " + msg); }
  void Error(const YAML::Node& n, const std::string& msg) { Error(LocOf(n), msg); }
  void Warn(const Loc& loc, const std::string& msg) { warnings.push_back(loc.ToString() + ": " + msg); }
  void Warn(const YAML::Node& n, const std::string& msg) { Warn(LocOf(n), msg); }
  const std::string& file() const { return file_; }

  std::vector<std::string> errors;
  std::vector<std::string> warnings;

 private:
  std::string file_;
};

// PyYAML-style resolution of a scalar node (no env expansion).
Value ResolveScalar(const YAML::Node& n);
// Whole node → Value (maps keep order), expanding env vars in string values.
Value NodeToValue(const YAML::Node& n, const VarLookup& vars);
// Short description for messages: "string 'abc'", "int 3", "map", "list", "null".
std::string Describe(const YAML::Node& n);
// Bounds on a document's shape, checked before any of it is read: nesting ≤ 200 levels and ≤ 1,000,000 nodes with
// every alias expanded. yaml-cpp resolves `&a [*a]` to a cycle and nested aliases grow exponentially ("billion
// laughs"): either would make NodeToValue recurse without end or exhaust memory. "" or a one-line located error.
std::string CheckYamlShape(const Diag& diag, const YAML::Node& root);

// Reads one YAML map. Every key read through it is marked consumed; Finish() warns about the others
// ("unknown key 'retyr' in execution_params (ignored); did you mean 'retry'?").
class MapReader {
 public:
  MapReader(Diag* diag, const VarLookup* vars, const YAML::Node& map, std::string section);

  bool Has(const char* key) const;
  YAML::Node Get(const char* key);   // undefined node when absent
  Loc LocOf(const char* key) const;  // location of the value (or of the map when absent)
  const std::string& section() const { return section_; }
  Diag* diag() const { return diag_; }
  const VarLookup& vars() const { return *vars_; }

  // Each getter leaves *out unchanged when the key is absent, reports a located error on a wrong type.
  // Returns true when a valid value was stored.
  bool String(const char* key, std::string* out);
  bool OptString(const char* key, std::optional<std::string>* out);  // explicit null → nullopt
  bool Int(const char* key, int64_t* out);
  bool OptInt(const char* key, std::optional<int64_t>* out);
  bool Bool(const char* key, bool* out);
  bool Double(const char* key, double* out);
  bool OptDouble(const char* key, std::optional<double>* out);
  bool AnyValue(const char* key, Value* out);
  bool MapValue(const char* key, Value* out);  // must be a map (null → empty map)
  bool StringList(const char* key, std::vector<std::string>* out);
  // Value must be one of `allowed` (exact).
  bool Literal(const char* key, const std::vector<std::string>& allowed, std::string* out);

  void Finish();

 private:
  std::string Field(const char* key) const { return section_.empty() ? key : section_ + "." + key; }
  Diag* diag_;
  const VarLookup* vars_;
  YAML::Node map_;
  std::string section_;
  std::set<std::string> consumed_;
};

}  // namespace mmirage::config
