// Internal to the query module: the built-in JMESPath functions and their signatures.
// Thread-safety: the table is constant; functions are pure.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "query/internal/jmespath_interpreter.h"

namespace mmirage::query::internal {

// Argument types, combined as a bit mask.
enum TypeMask : uint16_t {
  kTypeNull = 1 << 0,
  kTypeBool = 1 << 1,
  kTypeNumber = 1 << 2,
  kTypeString = 1 << 3,
  kTypeArray = 1 << 4,
  kTypeObject = 1 << 5,
  kTypeExpref = 1 << 6,
  kTypeArrayNumber = 1 << 7,  // array whose elements are all numbers
  kTypeArrayString = 1 << 8,  // array whose elements are all strings
  kTypeAny = kTypeNull | kTypeBool | kTypeNumber | kTypeString | kTypeArray | kTypeObject,
};

// One evaluated argument: a value, or (for `&expr` arguments) the expression to apply.
struct FunctionArg {
  Ref value;
  const Node* expref = nullptr;
};

using FunctionImpl = Result<Value> (*)(std::span<const FunctionArg> args);

struct FunctionSpec {
  std::string_view name;
  int min_args;
  bool variadic;          // any number >= min_args
  uint16_t arg_types[2];  // TypeMask bits per argument; a variadic function repeats the last one
  FunctionImpl impl;      // REQUIRES: arity checked, argument types checked against arg_types
};

// The function called `name`, nullptr when there is none.
const FunctionSpec* FindFunction(std::string_view name);

// OK, or InvalidArgument "function 'f()' takes N argument(s), got M" (no column).
Status CheckArity(const FunctionSpec& spec, size_t n_args);

// OK, or an "invalid-type: ..." InvalidArgument naming the first argument of the wrong type.
Status CheckArgTypes(const FunctionSpec& spec, std::span<const FunctionArg> args);

}  // namespace mmirage::query::internal
