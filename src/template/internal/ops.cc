// Python-semantics operations on runtime values: truthiness, equality/ordering, arithmetic (with overflow
// detection on int64), membership, Jinja's getattr/getitem fallback, slicing and iteration.
#include <cmath>
#include <limits>
#include <string>

#include "data/py_slice.h"
#include "template/internal/ast.h"
#include "template/internal/runtime.h"
#include "template/internal/unicode.h"

namespace mmirage::tmpl::internal {

Val Val::Alias() const {
  Val r;
  r.ref = &v();
  r.kind = kind;
  r.shape = shape;
  r.ptr = ptr;
  r.text = text;
  return r;
}

Val Val::Owned() const {
  Val r = *this;
  if (ref) {
    r.own = *ref;
    r.ref = nullptr;
  }
  return r;
}

Val Child(const Val& parent, const Value& child) {
  Val r = parent.ref ? Val::Borrow(child) : Val(child);
  if (parent.shape == Shape::kPairs || parent.shape == Shape::kDictItems) r.shape = Shape::kTuple;
  return r;
}

Status Err(std::string msg) { return Status::InvalidArgument(std::move(msg)); }
Status StringTooLarge() { return Err("string too large (the limit is 256 MiB)"); }
Status WidthTooLarge() { return Err("width too large (the limit is 16777216)"); }
Status ListTooLarge() { return Err("list too large (the limit is 16777216 items)"); }
Status UndefinedErr(const Val& undef) { return Err(undef.text.empty() ? "value is undefined" : undef.text.str()); }

std::string PyTypeName(const Val& v) {
  switch (v.kind) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kMacro: return "Macro";
    case Kind::kLoop: return "LoopContext";
    case Kind::kMethod: return "builtin_function_or_method";
    case Kind::kGlobal: return "function";
    case Kind::kValue: break;
  }
  switch (v.v().type()) {
    case Value::Type::kNull: return "NoneType";
    case Value::Type::kBool: return "bool";
    case Value::Type::kInt: return "int";
    case Value::Type::kDouble: return "float";
    case Value::Type::kString: return "str";
    case Value::Type::kArray: return v.shape == Shape::kTuple ? "tuple" : "list";
    case Value::Type::kObject: return v.shape == Shape::kNamespace ? "Namespace" : "dict";
    case Value::Type::kBytes: return "bytes";
  }
  return "object";
}

bool Truthy(const Val& v) {
  if (v.kind == Kind::kUndefined) return false;
  if (v.kind != Kind::kValue) return true;
  const Value& x = v.v();
  switch (x.type()) {
    case Value::Type::kNull: return false;
    case Value::Type::kBool: return x.as_bool();
    case Value::Type::kInt: return x.as_int() != 0;
    case Value::Type::kDouble: return x.as_double() != 0;
    case Value::Type::kString:
    case Value::Type::kBytes: return !x.as_string().empty();
    case Value::Type::kArray: return !x.as_array().empty();
    case Value::Type::kObject: return v.shape == Shape::kNamespace || !x.as_object().empty();
  }
  return false;
}

bool IsIntLike(const Value& v) { return v.is_int() || v.is_bool(); }
int64_t IntOf(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); }
bool IsNumLike(const Value& v) { return v.is_int() || v.is_bool() || v.is_double(); }
double NumOf(const Value& v) { return v.is_double() ? v.as_double() : static_cast<double>(IntOf(v)); }

bool NestedDeeperThan(const Value& v, int limit) {
  if (!v.is_array() && !v.is_object()) return false;
  if (limit <= 0) return true;
  if (v.is_array()) {
    for (const Value& e : v.as_array()) {
      if (NestedDeeperThan(e, limit - 1)) return true;
    }
  } else {
    for (const auto& m : v.as_object()) {
      if (NestedDeeperThan(m.second, limit - 1)) return true;
    }
  }
  return false;
}

Status TooDeepValue() { return Err("value nested too deeply (the limit is 2000 levels)"); }

namespace {
bool PyEqAt(const Value& a, const Value& b, int depth);
Result<int> PyCmpAt(const Value& a, const Value& b, std::string_view op, int depth);
}  // namespace

bool PyEq(const Value& a, const Value& b) { return PyEqAt(a, b, 0); }

Result<int> PyCmp(const Value& a, const Value& b, std::string_view op) { return PyCmpAt(a, b, op, 0); }

namespace {
bool PyEqAt(const Value& a, const Value& b, int depth) {
  if (depth > kMaxValueDepth) return false;
  if (IsNumLike(a) && IsNumLike(b)) {
    if (IsIntLike(a) && IsIntLike(b)) return IntOf(a) == IntOf(b);
    return NumOf(a) == NumOf(b);
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Value::Type::kNull: return true;
    case Value::Type::kString:
    case Value::Type::kBytes: return a.as_string() == b.as_string();
    case Value::Type::kArray: {
      const auto& x = a.as_array();
      const auto& y = b.as_array();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!PyEqAt(x[i], y[i], depth + 1)) return false;
      }
      return true;
    }
    case Value::Type::kObject: {
      if (a.as_object().size() != b.as_object().size()) return false;
      for (const auto& m : a.as_object()) {
        const Value* o = b.Find(m.first);
        if (o == nullptr || !PyEqAt(m.second, *o, depth + 1)) return false;
      }
      return true;
    }
    default: return false;
  }
}
}  // namespace

bool PyEqVal(const Val& a, const Val& b) {
  if (a.is_undefined() || b.is_undefined()) return a.is_undefined() && b.is_undefined();
  if (a.kind != Kind::kValue || b.kind != Kind::kValue) return a.ptr == b.ptr && a.kind == b.kind;
  if (a.v().is_array() && b.v().is_array() && ((a.shape == Shape::kTuple) != (b.shape == Shape::kTuple))) {
    return false;
  }
  return PyEq(a.v(), b.v());
}

namespace {
const char* TypeNameOf(const Value& v) {
  switch (v.type()) {
    case Value::Type::kNull: return "NoneType";
    case Value::Type::kBool: return "bool";
    case Value::Type::kInt: return "int";
    case Value::Type::kDouble: return "float";
    case Value::Type::kString: return "str";
    case Value::Type::kArray: return "list";
    case Value::Type::kObject: return "dict";
    case Value::Type::kBytes: return "bytes";
  }
  return "object";
}
}  // namespace

namespace {
Result<int> PyCmpAt(const Value& a, const Value& b, std::string_view op, int depth) {
  if (depth > kMaxValueDepth) return TooDeepValue();
  if (IsNumLike(a) && IsNumLike(b)) {
    if (IsIntLike(a) && IsIntLike(b)) {
      int64_t x = IntOf(a), y = IntOf(b);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    double x = NumOf(a), y = NumOf(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_array() && b.is_array()) {
    const auto& x = a.as_array();
    const auto& y = b.as_array();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!PyEqAt(x[i], y[i], depth + 1)) return PyCmpAt(x[i], y[i], op, depth + 1);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  return Err("'" + std::string(op) + "' not supported between instances of '" + TypeNameOf(a) + "' and '" +
             TypeNameOf(b) + "'");
}
}  // namespace

namespace {

Status Unsupported(const char* op, const Val& a, const Val& b) {
  return Err(std::string("unsupported operand type(s) for ") + op + ": '" + PyTypeName(a) + "' and '" + PyTypeName(b) +
             "'");
}
Status Overflow() { return Err("integer overflow (Python would produce a big integer)"); }

Result<Val> Repeat(const Val& seq, int64_t n) {
  const Value& s = seq.v();
  if (n < 0) n = 0;
  if (s.is_string()) {
    if (s.as_string().empty()) return Val(Value(std::string()));
    if (!ProductFits(s.as_string().size(), static_cast<uint64_t>(n), kMaxStringBytes)) return StringTooLarge();
    std::string r;
    r.reserve(s.as_string().size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) r += s.as_string();
    return Val(Value(std::move(r)));
  }
  Value::Array r;
  if (!s.as_array().empty()) {
    if (!ProductFits(s.as_array().size(), static_cast<uint64_t>(n), kMaxListItems)) return ListTooLarge();
    r.reserve(s.as_array().size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) r.insert(r.end(), s.as_array().begin(), s.as_array().end());
  }
  Val out{Value(std::move(r))};
  out.shape = seq.shape == Shape::kTuple ? Shape::kTuple : Shape::kPlain;
  return out;
}

double FloatFloorDiv(double vx, double wx, double* mod_out) {
  double mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0) {
    if ((wx < 0) != (mod < 0)) {
      mod += wx;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, wx);
  }
  double floordiv;
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, vx / wx);
  }
  *mod_out = mod;
  return floordiv;
}

Result<Val> IntPow(int64_t base, int64_t exp) {
  int64_t result = 1;
  int64_t b = base;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, b, &result)) return Overflow();
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(b, b, &b)) return Overflow();
  }
  return Val(Value(result));
}

}  // namespace

Result<Val> BinaryOp(int op_int, const Val& a, const Val& b) {
  BinOp op = static_cast<BinOp>(op_int);
  if (a.is_undefined()) return UndefinedErr(a);
  if (b.is_undefined()) return UndefinedErr(b);
  static const char* kNames[] = {"+", "-", "*", "/", "//", "%", "** or pow()"};
  const char* name = kNames[op_int];
  if (a.kind != Kind::kValue || b.kind != Kind::kValue) return Unsupported(name, a, b);
  const Value& x = a.v();
  const Value& y = b.v();
  bool nums = IsNumLike(x) && IsNumLike(y);
  bool ints = IsIntLike(x) && IsIntLike(y);
  switch (op) {
    case BinOp::kAdd:
      if (ints) {
        int64_t r;
        if (__builtin_add_overflow(IntOf(x), IntOf(y), &r)) return Overflow();
        return Val(Value(r));
      }
      if (nums) return Val(Value(NumOf(x) + NumOf(y)));
      if (x.is_string() && y.is_string()) {
        if (!StringFits(uint64_t{x.as_string().size()} + y.as_string().size())) return StringTooLarge();
        return Val(Value(x.as_string() + y.as_string()));
      }
      if (x.is_array() && y.is_array()) {
        bool tx = a.shape == Shape::kTuple, ty = b.shape == Shape::kTuple;
        if (tx != ty) {
          return Err(std::string("can only concatenate ") + (tx ? "tuple" : "list") + " (not \"" +
                     (ty ? "tuple" : "list") + "\") to " + (tx ? "tuple" : "list"));
        }
        if (!ListFits(uint64_t{x.as_array().size()} + y.as_array().size())) return ListTooLarge();
        Value::Array r = x.as_array();
        r.insert(r.end(), y.as_array().begin(), y.as_array().end());
        Val out{Value(std::move(r))};
        out.shape = tx ? Shape::kTuple : Shape::kPlain;
        return out;
      }
      return Unsupported(name, a, b);
    case BinOp::kSub:
      if (ints) {
        int64_t r;
        if (__builtin_sub_overflow(IntOf(x), IntOf(y), &r)) return Overflow();
        return Val(Value(r));
      }
      if (nums) return Val(Value(NumOf(x) - NumOf(y)));
      return Unsupported(name, a, b);
    case BinOp::kMul:
      if (ints) {
        int64_t r;
        if (__builtin_mul_overflow(IntOf(x), IntOf(y), &r)) return Overflow();
        return Val(Value(r));
      }
      if (nums) return Val(Value(NumOf(x) * NumOf(y)));
      if ((x.is_string() || x.is_array()) && IsIntLike(y)) return Repeat(a, IntOf(y));
      if ((y.is_string() || y.is_array()) && IsIntLike(x)) return Repeat(b, IntOf(x));
      if ((x.is_string() || x.is_array()) && y.is_array() == false && !IsNumLike(y)) {
        return Err("can't multiply sequence by non-int of type '" + PyTypeName(b) + "'");
      }
      if (x.is_string() || x.is_array() || y.is_string() || y.is_array()) {
        return Err("can't multiply sequence by non-int of type '" + PyTypeName(x.is_string() || x.is_array() ? b : a) +
                   "'");
      }
      return Unsupported(name, a, b);
    case BinOp::kDiv:
      if (nums) {
        if (NumOf(y) == 0) return Err("division by zero");
        if (ints) {
          int64_t p = IntOf(x), q = IntOf(y);
          // INT64_MIN / -1 overflows int64 (SIGFPE): it is exactly representable as a double.
          if (q == -1) return Val(Value(-static_cast<double>(p)));
          if (p % q == 0 && std::llabs(p / q) < (int64_t{1} << 53)) return Val(Value(static_cast<double>(p / q)));
        }
        return Val(Value(NumOf(x) / NumOf(y)));
      }
      return Unsupported(name, a, b);
    case BinOp::kFloorDiv:
    case BinOp::kMod:
      if (op == BinOp::kMod && x.is_string()) {
        MMIRAGE_ASSIGN_OR_RETURN(std::string s, PercentFormat(x.as_string(), b));
        return Val(Value(std::move(s)));
      }
      if (ints) {
        int64_t p = IntOf(x), q = IntOf(y);
        if (q == 0) return Err("integer division or modulo by zero");
        if (p == std::numeric_limits<int64_t>::min() && q == -1) {
          if (op == BinOp::kMod) return Val(Value(int64_t{0}));
          return Overflow();
        }
        int64_t d = p / q, m = p % q;
        if (m != 0 && ((m < 0) != (q < 0))) {
          m += q;
          d -= 1;
        }
        return Val(Value(op == BinOp::kMod ? m : d));
      }
      if (nums) {
        double q = NumOf(y);
        if (q == 0) return Err(op == BinOp::kMod ? "float modulo" : "float floor division by zero");
        double mod;
        double d = FloatFloorDiv(NumOf(x), q, &mod);
        return Val(Value(op == BinOp::kMod ? mod : d));
      }
      return Unsupported(name, a, b);
    case BinOp::kPow:
      if (ints && IntOf(y) >= 0) return IntPow(IntOf(x), IntOf(y));
      if (nums) {
        double p = NumOf(x), q = NumOf(y);
        if (p == 0 && q < 0) return Err("0.0 cannot be raised to a negative power");
        if (p < 0 && q != std::floor(q)) return Err("complex results are not supported");
        double r = std::pow(p, q);
        if (std::isinf(r) && std::isfinite(p) && std::isfinite(q)) return Err("(34, 'Numerical result out of range')");
        return Val(Value(r));
      }
      return Unsupported(name, a, b);
  }
  return Unsupported(name, a, b);
}

Result<Val> Negate(const Val& a, bool minus) {
  if (a.is_undefined()) return UndefinedErr(a);
  const Value& x = a.v();
  if (a.kind == Kind::kValue && IsIntLike(x)) {
    int64_t i = IntOf(x);
    if (!minus) return Val(Value(i));
    if (i == std::numeric_limits<int64_t>::min()) return Overflow();
    return Val(Value(-i));
  }
  if (a.kind == Kind::kValue && x.is_double()) return Val(Value(minus ? -x.as_double() : x.as_double()));
  return Err(std::string("bad operand type for unary ") + (minus ? "-" : "+") + ": '" + PyTypeName(a) + "'");
}

Result<bool> Contains(const Val& container, const Val& item) {
  if (container.is_undefined()) return false;
  const Value& c = container.v();
  if (container.kind != Kind::kValue) return Err("argument of type '" + PyTypeName(container) + "' is not iterable");
  if (c.is_string()) {
    if (item.kind != Kind::kValue || !item.v().is_string()) {
      return Err("'in <string>' requires string as left operand, not " + PyTypeName(item));
    }
    return c.as_string().find(item.v().as_string()) != std::string::npos;
  }
  if (c.is_array()) {
    for (const Value& e : c.as_array()) {
      if (item.kind == Kind::kValue && PyEq(e, item.v())) return true;
    }
    return false;
  }
  if (c.is_object() && container.shape != Shape::kNamespace) {
    if (item.kind == Kind::kValue && (item.v().is_array() || item.v().is_object()) && item.shape != Shape::kTuple) {
      return Err("unhashable type: '" + PyTypeName(item) + "'");
    }
    if (item.kind == Kind::kValue && item.v().is_string()) return c.Find(item.v().as_string()) != nullptr;
    return false;
  }
  return Err("argument of type '" + PyTypeName(container) + "' is not iterable");
}

Result<bool> CompareOp(int op_int, const Val& a, const Val& b) {
  CmpOp op = static_cast<CmpOp>(op_int);
  if (NestedDeeperThan(a.v(), kMaxValueDepth) || NestedDeeperThan(b.v(), kMaxValueDepth)) return TooDeepValue();
  switch (op) {
    case CmpOp::kEq: return PyEqVal(a, b);
    case CmpOp::kNe: return !PyEqVal(a, b);
    case CmpOp::kIn: return Contains(b, a);
    case CmpOp::kNotIn: {
      MMIRAGE_ASSIGN_OR_RETURN(bool in, Contains(b, a));
      return !in;
    }
    default: break;
  }
  if (a.is_undefined()) return UndefinedErr(a);
  if (b.is_undefined()) return UndefinedErr(b);
  static const char* kOps[] = {"==", "!=", "<", "<=", ">", ">="};
  const char* name = kOps[op_int];
  if (a.kind != Kind::kValue || b.kind != Kind::kValue) {
    return Err(std::string("'") + name + "' not supported between instances of '" + PyTypeName(a) + "' and '" +
               PyTypeName(b) + "'");
  }
  if (IsNumLike(a.v()) && IsNumLike(b.v()) && (a.v().is_double() || b.v().is_double())) {
    double x = NumOf(a.v()), y = NumOf(b.v());  // NaN-aware
    switch (op) {
      case CmpOp::kLt: return x < y;
      case CmpOp::kLe: return x <= y;
      case CmpOp::kGt: return x > y;
      default: return x >= y;
    }
  }
  MMIRAGE_ASSIGN_OR_RETURN(int c, PyCmp(a.v(), b.v(), name));
  switch (op) {
    case CmpOp::kLt: return c < 0;
    case CmpOp::kLe: return c <= 0;
    case CmpOp::kGt: return c > 0;
    default: return c >= 0;
  }
}

namespace {

std::string ObjRepr(const Val& obj) {
  if (obj.kind == Kind::kValue && obj.v().is_null()) return "'None'";
  return "'" + PyTypeName(obj) + " object'";
}

Val MethodVal(const Val& self, std::string_view name) {
  Val m = self.ref ? Val::Borrow(*self.ref) : Val(self.v());
  m.kind = Kind::kMethod;
  m.shape = self.shape;
  m.text = std::string(name);
  return m;
}

}  // namespace

Result<Val> GetAttr(const Val& obj, std::string_view name) {
  if (obj.is_undefined()) return UndefinedErr(obj);
  if (obj.kind != Kind::kValue) return Val::Undefined(ObjRepr(obj) + " has no attribute '" + std::string(name) + "'");
  const Value& o = obj.v();
  if (obj.shape != Shape::kNamespace && HasMethod(o, name)) return MethodVal(obj, name);
  if (o.is_object()) {
    const Value* m = o.Find(name);
    if (m != nullptr) return Child(obj, *m);
  }
  return Val::Undefined(ObjRepr(obj) + " has no attribute '" + std::string(name) + "'");
}

Result<Val> GetItem(const Val& obj, const Val& key) {
  if (obj.is_undefined()) return UndefinedErr(obj);
  if (key.is_undefined() && obj.kind == Kind::kValue && obj.v().is_object()) {
    return Val::Undefined(ObjRepr(obj) + " has no attribute ''");
  }
  const Value& o = obj.v();
  const Value& k = key.v();
  if (obj.kind == Kind::kValue && key.kind == Kind::kValue) {
    if ((o.is_array() || o.is_string()) && IsIntLike(k)) {
      int64_t i = IntOf(k);
      if (o.is_array()) {
        int64_t n = static_cast<int64_t>(o.as_array().size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) return Child(obj, o.as_array()[i]);
      } else {
        std::u32string u = ToU32(o.as_string());
        int64_t n = static_cast<int64_t>(u.size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) return Val(Value(FromU32(u.substr(i, 1))));
      }
      return Val::Undefined(ObjRepr(obj) + " has no element " + std::to_string(IntOf(k)));
    }
    if (o.is_object() && obj.shape != Shape::kNamespace && k.is_string()) {
      const Value* m = o.Find(k.as_string());
      if (m != nullptr) return Child(obj, *m);
    }
    if (k.is_string()) {
      if (obj.shape != Shape::kNamespace && HasMethod(o, k.as_string())) return MethodVal(obj, k.as_string());
      return Val::Undefined(ObjRepr(obj) + " has no attribute '" + k.as_string() + "'");
    }
  }
  std::string ks;
  AppendStr(key, &ks);
  return Val::Undefined(ObjRepr(obj) + " has no element " + ks);
}

Result<Val> SliceOf(const Val& obj, const Val* start, const Val* stop, const Val* step) {
  if (obj.is_undefined()) return UndefinedErr(obj);
  const Value& o = obj.v();
  if (obj.kind != Kind::kValue || !(o.is_array() || o.is_string())) {
    return Val::Undefined(ObjRepr(obj) + " is not subscriptable");
  }
  auto get = [](const Val* v, bool* present, int64_t* out) -> bool {
    *present = false;
    if (v == nullptr || (v->kind == Kind::kValue && v->v().is_null())) return true;
    if (v->kind != Kind::kValue || !IsIntLike(v->v())) return false;
    *present = true;
    *out = IntOf(v->v());
    return true;
  };
  bool has_start, has_stop, has_step;
  int64_t a = 0, b = 0, s = 1;
  if (!get(start, &has_start, &a) || !get(stop, &has_stop, &b) || !get(step, &has_step, &s)) {
    return Val::Undefined("slice indices must be integers or None");
  }
  if (!has_step) s = 1;
  if (s == 0) return Err("slice step cannot be zero");
  std::u32string u;
  int64_t n;
  if (o.is_string()) {
    u = ToU32(o.as_string());
    n = static_cast<int64_t>(u.size());
  } else {
    n = static_cast<int64_t>(o.as_array().size());
  }
  SliceIndices idx = PySliceIndices(n, has_start ? std::optional<int64_t>(a) : std::nullopt,
                                    has_stop ? std::optional<int64_t>(b) : std::nullopt, s);
  auto at = [&](size_t k) { return static_cast<size_t>(idx.first + idx.step * static_cast<int64_t>(k)); };
  if (o.is_string()) {
    std::u32string r;
    r.reserve(idx.count);
    for (size_t k = 0; k < idx.count; ++k) r.push_back(u[at(k)]);
    return Val(Value(FromU32(r)));
  }
  Value::Array r;
  r.reserve(idx.count);
  for (size_t k = 0; k < idx.count; ++k) r.push_back(o.as_array()[at(k)]);
  Val out{Value(std::move(r))};
  out.shape = obj.shape == Shape::kTuple ? Shape::kTuple : Shape::kPlain;
  return out;
}

Result<std::vector<Val>> Iterate(const Val& holder) {
  std::vector<Val> items;
  if (holder.is_undefined()) return items;
  const Value& h = holder.v();
  if (holder.kind == Kind::kValue) {
    if (h.is_array()) {
      items.reserve(h.as_array().size());
      bool pairs = holder.shape == Shape::kPairs || holder.shape == Shape::kDictItems;
      for (const Value& e : h.as_array()) {
        items.push_back(Val::Borrow(e));
        if (pairs) items.back().shape = Shape::kTuple;
      }
      return items;
    }
    if (h.is_string()) {
      const std::string& s = h.as_string();
      // One item per code point: a string near kMaxStringBytes would be hundreds of millions of items (fuzz_template:
      // `…|join(…)|list` ran out of memory). Strings iterate under the list bound like anything else a render
      // builds. Counted as NextCp steps, so that each byte of invalid UTF-8 (an item of its own) counts too.
      size_t cps = 0;
      for (size_t j = 0; j < s.size(); ++cps) NextCp(s, &j);
      if (!ListFits(cps)) return ListTooLarge();
      items.reserve(cps);
      size_t i = 0;
      while (i < s.size()) {
        size_t st = i;
        NextCp(s, &i);
        items.emplace_back(Value(s.substr(st, i - st)));
      }
      return items;
    }
    if (h.is_object() && holder.shape != Shape::kNamespace) {
      for (const auto& m : h.as_object()) items.emplace_back(Value(m.first));
      return items;
    }
  }
  return Err("'" + PyTypeName(holder) + "' object is not iterable");
}

Val MakeList(const std::vector<Val>& items, Shape shape) {
  Value::Array a;
  a.reserve(items.size());
  for (const Val& v : items) a.push_back(v.v());
  Val r{Value(std::move(a))};
  r.shape = shape;
  if (shape == Shape::kPlain && !items.empty()) {
    bool all_tuples = true;
    for (const Val& v : items) all_tuples = all_tuples && v.shape == Shape::kTuple;
    if (all_tuples) r.shape = Shape::kPairs;
  }
  return r;
}

}  // namespace mmirage::tmpl::internal
