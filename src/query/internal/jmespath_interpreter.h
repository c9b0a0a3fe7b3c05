// Internal to the query module: evaluates a JMESPath AST over a Value.
//
// Results are Refs: either a pointer borrowed from the input (or from the AST's literals), or an owned Value
// computed on the way. Field and index lookups thus never copy; only a projection, multi-select or function
// builds a new Value. Lifetime rule: a Ref borrowed while evaluating over `current` is valid as long as
// `current` is; the interpreter copies a borrowed result out before an owned temporary it points into dies.
// Thread-safety: stateless; the AST is only read.
#pragma once

#include "data/value.h"
#include "query/internal/jmespath_ast.h"
#include "util/status.h"

namespace mmirage::query::internal {

const Value& NullValue();

class Ref {
 public:
  Ref() : ptr_(&NullValue()) {}  // null
  static Ref Borrow(const Value& v) {
    Ref r;
    r.ptr_ = &v;
    return r;
  }
  static Ref Own(Value v) {
    Ref r;
    r.ptr_ = nullptr;
    r.owned_ = std::move(v);
    return r;
  }

  bool owned() const { return ptr_ == nullptr; }
  const Value& operator*() const { return ptr_ != nullptr ? *ptr_ : owned_; }
  const Value* operator->() const { return &**this; }
  // The value itself: moved out when owned, copied when borrowed.
  Value Take() && { return ptr_ != nullptr ? *ptr_ : std::move(owned_); }

 private:
  const Value* ptr_;  // borrowed value, or nullptr when owned_ holds the value
  Value owned_;
};

// JMESPath truthiness: false, null, "", [] and {} are false; everything else (including 0) is true.
bool IsTruthy(const Value& v);

// Evaluates `node` with `current` as the current node. Errors: invalid-type / invalid-value statuses.
Result<Ref> EvalNode(const Node& node, const Value& current);

}  // namespace mmirage::query::internal
