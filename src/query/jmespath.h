// JMESPath (https://jmespath.org/specification.html): compile an expression once, evaluate it on many rows.
// Compile parses the text and resolves every function call, so syntax errors, unknown functions and wrong argument
// counts are reported before any data is read; Evaluate reports only data-dependent type/value errors. Passes the
// official compliance suite; where the specification leaves room, behaviour follows jmespath.py (details in
// jmespath.cc). Errors: Status::InvalidArgument with a one-line message; ErrorKindOf / ErrorColumnOf read back the
// error kind and the 1-based column, so callers never parse messages.
// Thread-safety: after Compile an Expression is immutable (its AST shared, copying is a refcount bump) and Evaluate
// may run concurrently. Evaluate never copies the input; only the final result is copied (copy-on-write).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "data/json.h"
#include "data/value.h"
#include "util/status.h"

namespace mmirage::query {

// The error kinds of the JMESPath specification.
enum class ErrorKind { kSyntax, kUnknownFunction, kInvalidArity, kInvalidType, kInvalidValue };

namespace internal {
struct Program;
}  // namespace internal

class Expression {
 public:
  // An empty expression: text() is "" and Evaluate returns null. Exists so that config structs can hold one.
  Expression() = default;

  // Compiles `text`. On failure returns Status::InvalidArgument with a one-line message, e.g.
  //   "syntax error at column 6: expected ']', got end of expression (in 'foo[1')"
  //   "unknown function 'lenght()' at column 1"
  //   "function 'length()' takes 1 argument, got 2 at column 1"
  // Columns are 1-based and count Unicode code points of `text`. When the text has both a syntax error and a
  // bad function call, the syntax error is reported.
  static Result<Expression> Compile(std::string_view text);

  // Evaluates against `data` (borrowed for the duration of the call). Returns the result (null when a path does
  // not exist, as JMESPath specifies). Fails with Status::InvalidArgument whose message starts with the error
  // kind, e.g. "invalid-type: function 'abs()' expected number, got string" or
  // "invalid-value: slice step cannot be 0".
  Result<Value> Evaluate(const Value& data) const;

  // The source text given to Compile ("" for the empty expression).
  const std::string& text() const;

  // When the expression is a chain of field and index lookups (`a.b[0].c`): its steps, valid while the expression
  // lives, for readers that walk JSON text without building the row (data/json.h ParseJsonPaths gives the result
  // Evaluate would give on the parsed row). nullptr otherwise.
  const JsonPath* FieldPath() const;

 private:
  explicit Expression(std::shared_ptr<const internal::Program> program) : program_(std::move(program)) {}
  std::shared_ptr<const internal::Program> program_;  // null for the empty expression
};

// The kind of a non-OK Status returned by Compile or Evaluate (also after Status::WithContext prefixes).
// For a Status that did not come from this module the result is kInvalidValue.
ErrorKind ErrorKindOf(const Status& s);

// The 1-based column of a compile error (syntax, unknown function, arity); 0 for runtime errors, OK or foreign
// statuses.
int ErrorColumnOf(const Status& s);

}  // namespace mmirage::query
