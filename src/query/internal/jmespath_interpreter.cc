#include "query/internal/jmespath_interpreter.h"

#include "data/py_slice.h"

#include <vector>

#include "query/internal/jmespath_functions.h"

namespace mmirage::query::internal {
namespace {

const Value kTrue(true);
const Value kFalse(false);

Ref Bool(bool b) { return Ref::Borrow(b ? kTrue : kFalse); }

// `result` was computed with *context as the current node; if context is an owned temporary, a borrowed
// result may point into it, so copy it out before the context dies.
Ref Anchor(Ref result, const Ref& context) {
  if (context.owned() && !result.owned()) return Ref::Own(*result);
  return result;
}

// Python slice semantics as the specification defines them.
Result<Ref> Slice(const Node& n, const Value& current) {
  if (!current.is_array()) return Ref();
  const int64_t step = n.slice[2].value_or(1);
  if (step == 0) return Status::InvalidArgument("invalid-value: slice step cannot be 0");
  const Value::Array& a = current.as_array();
  SliceIndices idx = PySliceIndices(static_cast<int64_t>(a.size()), n.slice[0], n.slice[1], step);
  Value::Array out;
  out.reserve(idx.count);
  for (size_t k = 0; k < idx.count; ++k) out.push_back(a[static_cast<size_t>(idx.first + idx.step * int64_t(k))]);
  return Ref::Own(Value(std::move(out)));
}

template <typename T>
bool Ordered(Comparator op, const T& l, const T& r) {
  switch (op) {
    case Comparator::kLt: return l < r;
    case Comparator::kLe: return l <= r;
    case Comparator::kGt: return l > r;
    default: return l >= r;
  }
}

Result<Ref> Compare(const Node& n, const Value& current) {
  MMIRAGE_ASSIGN_OR_RETURN(Ref lhs, EvalNode(*n.children[0], current));
  MMIRAGE_ASSIGN_OR_RETURN(Ref rhs, EvalNode(*n.children[1], current));
  switch (n.op) {
    case Comparator::kEq: return Bool(*lhs == *rhs);
    case Comparator::kNe: return Bool(*lhs != *rhs);
    default: break;
  }
  // The specification orders numbers only; like the reference implementation (jmespath.py >= 1.0) we also
  // order two strings, by code point (= UTF-8 byte order). Any other pair compares to null.
  bool result;
  if (lhs->is_string() && rhs->is_string()) {
    result = Ordered(n.op, lhs->as_string().compare(rhs->as_string()), 0);
  } else if (!lhs->is_number() || !rhs->is_number()) {
    return Ref();
  } else if (lhs->is_int() && rhs->is_int()) {
    result = Ordered(n.op, lhs->as_int(), rhs->as_int());
  } else {
    result = Ordered(n.op, lhs->as_number(), rhs->as_number());
  }
  return Bool(result);
}

// Applies n.children[1] to each element (array projection) or value (object projection) of n.children[0],
// keeping non-null results. Filter projections first test n.children[2].
Result<Ref> Project(const Node& n, const Value& current) {
  MMIRAGE_ASSIGN_OR_RETURN(Ref base, EvalNode(*n.children[0], current));
  const Node& rhs = *n.children[1];
  const bool identity = rhs.type == NodeType::kCurrent;
  Value::Array out;
  auto apply = [&](const Value& element) -> Status {
    if (n.type == NodeType::kFilterProjection) {
      MMIRAGE_ASSIGN_OR_RETURN(Ref keep, EvalNode(*n.children[2], element));
      if (!IsTruthy(*keep)) return Status::OK();
    }
    if (identity) {
      if (!element.is_null()) out.push_back(element);
      return Status::OK();
    }
    MMIRAGE_ASSIGN_OR_RETURN(Ref r, EvalNode(rhs, element));
    if (!r->is_null()) out.push_back(std::move(r).Take());
    return Status::OK();
  };
  if (n.type == NodeType::kValueProjection) {
    if (!base->is_object()) return Ref();
    out.reserve(base->as_object().size());
    for (const auto& member : base->as_object()) MMIRAGE_TRY(apply(member.second));
  } else {
    if (!base->is_array()) return Ref();
    out.reserve(base->as_array().size());
    for (const Value& element : base->as_array()) MMIRAGE_TRY(apply(element));
  }
  return Ref::Own(Value(std::move(out)));
}

Result<Ref> Flatten(const Node& n, const Value& current) {
  MMIRAGE_ASSIGN_OR_RETURN(Ref base, EvalNode(*n.children[0], current));
  if (!base->is_array()) return Ref();
  Value::Array out;
  out.reserve(base->as_array().size());
  for (const Value& element : base->as_array()) {
    if (element.is_array()) {
      out.insert(out.end(), element.as_array().begin(), element.as_array().end());
    } else {
      out.push_back(element);
    }
  }
  return Ref::Own(Value(std::move(out)));
}

Result<Ref> MultiSelect(const Node& n, const Value& current) {
  if (current.is_null()) return Ref();
  if (n.type == NodeType::kMultiSelectList) {
    Value::Array out;
    out.reserve(n.children.size());
    for (const auto& child : n.children) {
      MMIRAGE_ASSIGN_OR_RETURN(Ref r, EvalNode(*child, current));
      out.push_back(std::move(r).Take());
    }
    return Ref::Own(Value(std::move(out)));
  }
  Value::Object out;
  out.reserve(n.children.size());
  for (size_t i = 0; i < n.children.size(); ++i) {
    MMIRAGE_ASSIGN_OR_RETURN(Ref r, EvalNode(*n.children[i], current));
    out.emplace_back(n.keys[i], std::move(r).Take());
  }
  return Ref::Own(Value(std::move(out)));
}

Result<Ref> CallFunction(const Node& n, const Value& current) {
  const FunctionSpec& spec = *n.function;
  FunctionArg inline_args[2];
  std::vector<FunctionArg> heap_args;
  std::span<FunctionArg> args;
  if (n.children.size() <= 2) {
    args = std::span<FunctionArg>(inline_args, n.children.size());
  } else {
    heap_args.resize(n.children.size());
    args = std::span<FunctionArg>(heap_args);
  }
  for (size_t i = 0; i < n.children.size(); ++i) {
    const Node& child = *n.children[i];
    if (child.type == NodeType::kExpRef) {
      args[i].expref = child.children[0].get();
    } else {
      MMIRAGE_ASSIGN_OR_RETURN(args[i].value, EvalNode(child, current));
    }
  }
  MMIRAGE_TRY(CheckArgTypes(spec, args));
  MMIRAGE_ASSIGN_OR_RETURN(Value result, spec.impl(args));
  return Ref::Own(std::move(result));
}

}  // namespace

const Value& NullValue() {
  static const Value null_value;
  return null_value;
}

bool IsTruthy(const Value& v) {
  switch (v.type()) {
    case Value::Type::kNull: return false;
    case Value::Type::kBool: return v.as_bool();
    case Value::Type::kString:
    case Value::Type::kBytes: return !v.as_string().empty();
    case Value::Type::kArray:
    case Value::Type::kObject: return v.size() != 0;
    default: return true;
  }
}

Result<Ref> EvalNode(const Node& n, const Value& current) {
  switch (n.type) {
    case NodeType::kCurrent: return Ref::Borrow(current);
    case NodeType::kField: {
      const Value* v = current.Find(n.name);
      return v != nullptr ? Ref::Borrow(*v) : Ref();
    }
    case NodeType::kSubexpression:
    case NodeType::kPipe: {
      MMIRAGE_ASSIGN_OR_RETURN(Ref lhs, EvalNode(*n.children[0], current));
      MMIRAGE_ASSIGN_OR_RETURN(Ref rhs, EvalNode(*n.children[1], *lhs));
      return Anchor(std::move(rhs), lhs);
    }
    case NodeType::kIndex: {
      if (!current.is_array()) return Ref();
      const Value::Array& a = current.as_array();
      int64_t i = n.index;
      if (i < 0) i += static_cast<int64_t>(a.size());
      if (i < 0 || i >= static_cast<int64_t>(a.size())) return Ref();
      return Ref::Borrow(a[static_cast<size_t>(i)]);
    }
    case NodeType::kSlice: return Slice(n, current);
    case NodeType::kProjection:
    case NodeType::kValueProjection:
    case NodeType::kFilterProjection: return Project(n, current);
    case NodeType::kFlatten: return Flatten(n, current);
    case NodeType::kLiteral: return Ref::Borrow(n.literal);
    case NodeType::kMultiSelectList:
    case NodeType::kMultiSelectHash: return MultiSelect(n, current);
    case NodeType::kOr: {
      MMIRAGE_ASSIGN_OR_RETURN(Ref lhs, EvalNode(*n.children[0], current));
      if (IsTruthy(*lhs)) return lhs;
      return EvalNode(*n.children[1], current);
    }
    case NodeType::kAnd: {
      MMIRAGE_ASSIGN_OR_RETURN(Ref lhs, EvalNode(*n.children[0], current));
      if (!IsTruthy(*lhs)) return lhs;
      return EvalNode(*n.children[1], current);
    }
    case NodeType::kNot: {
      MMIRAGE_ASSIGN_OR_RETURN(Ref operand, EvalNode(*n.children[0], current));
      return Bool(!IsTruthy(*operand));
    }
    case NodeType::kComparator: return Compare(n, current);
    case NodeType::kFunction: return CallFunction(n, current);
    case NodeType::kExpRef:
      // An expression reference is only meaningful as a function argument (handled in CallFunction).
      return Ref();
  }
  return Ref();
}

}  // namespace mmirage::query::internal
