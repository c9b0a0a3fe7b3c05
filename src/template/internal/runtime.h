// Internal: the runtime value (Val) of the evaluator and the Python-semantics operations on it.
// A Val either borrows a Value that outlives the current expression (a context variable, a local, an element of
// a borrowed container) or owns one; special kinds cover Jinja's Undefined, macros, the loop object and
// bound methods. Nothing here is shared between renders.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/value.h"
#include "util/status.h"

namespace mmirage::tmpl::internal {

enum class Kind : uint8_t { kValue, kUndefined, kMacro, kLoop, kMethod, kGlobal };
// How an array/object/string prints in Python: a tuple, a list of 2-tuples, dict views, a namespace, Markup.
enum class Shape : uint8_t { kPlain, kTuple, kPairs, kDictItems, kDictKeys, kDictValues, kNamespace, kMarkup };

// A rarely-set string that costs one pointer to move (Vals are moved a lot on the hot path).
class BoxedText {
 public:
  BoxedText() = default;
  BoxedText(const BoxedText& o) : p_(o.p_ ? std::make_unique<std::string>(*o.p_) : nullptr) {}
  BoxedText(BoxedText&&) noexcept = default;
  BoxedText& operator=(const BoxedText& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<std::string>(*o.p_) : nullptr;
    return *this;
  }
  BoxedText& operator=(BoxedText&&) noexcept = default;
  BoxedText& operator=(std::string s) {
    p_ = std::make_unique<std::string>(std::move(s));
    return *this;
  }
  bool empty() const { return !p_ || p_->empty(); }
  const std::string& str() const {
    static const std::string kEmpty;
    return p_ ? *p_ : kEmpty;
  }

 private:
  std::unique_ptr<std::string> p_;
};

struct Val {
  Val() = default;
  explicit Val(Value v) : own(std::move(v)) {}
  static Val Borrow(const Value& v) {
    Val r;
    r.ref = &v;
    return r;
  }
  static Val Undefined(std::string hint) {
    Val r;
    r.kind = Kind::kUndefined;
    r.text = std::move(hint);
    return r;
  }
  const Value& v() const { return ref ? *ref : own ? *own : NullValue(); }
  static const Value& NullValue() {
    static const Value kNull;
    return kNull;
  }
  bool is_value() const { return kind == Kind::kValue; }
  bool is_undefined() const { return kind == Kind::kUndefined; }
  // A Val that refers to the same data without copying it (valid while *this lives).
  Val Alias() const;
  // Detaches from borrowed storage (copies the Value).
  Val Owned() const;

  const Value* ref = nullptr;
  std::optional<Value> own;  // engaged when owned; borrowed and special Vals skip Value moves
  Kind kind = Kind::kValue;
  Shape shape = Shape::kPlain;
  const void* ptr = nullptr;  // kMacro: const Stmt*; kLoop: const LoopState*
  BoxedText text;             // kUndefined: error hint ("'x' is undefined"); kMethod/kGlobal: name
};

// A child of `parent` (element/member): borrowed when the parent is borrowed, else copied.
Val Child(const Val& parent, const Value& child);

// Limits that keep hostile data from exhausting memory, time or the stack (documented in template.h). A
// violation is a render error (a row error), never an abort.
constexpr size_t kMaxStringBytes = size_t{256} << 20;  // any string a render builds, and the rendered text
constexpr size_t kMaxListItems = size_t{1} << 24;      // any list a render builds (range, repeat, batch...)
constexpr int64_t kMaxLoopIterations = 10'000'000;     // for-loop bodies run, summed over one render
constexpr int kMaxEvalDepth = 400;                     // nested evaluation frames (expressions, blocks, macros)
constexpr int kMaxValueDepth = 2000;                   // nesting of a value printed, compared or serialised
constexpr int64_t kMaxWidth = int64_t{1} << 24;        // format widths/precisions, paddings, indents

// Errors produced while rendering; the evaluator prefixes the line.
Status Err(std::string msg);
// "string too large" / "list too large" errors naming the limit.
Status StringTooLarge();
Status ListTooLarge();
Status WidthTooLarge();
// OK when a string of `bytes` bytes (or a list of `items` items) may be built.
inline bool StringFits(uint64_t bytes) { return bytes <= kMaxStringBytes; }
inline bool ListFits(uint64_t items) { return items <= kMaxListItems; }
// n * size without overflow; false when it exceeds `limit`.
inline bool ProductFits(uint64_t size, uint64_t n, uint64_t limit) {
  uint64_t p;
  return !__builtin_mul_overflow(size, n, &p) && p <= limit;
}
Status UndefinedErr(const Val& undef);  // UndefinedError for using an undefined value

// Python type name of a value: 'int', 'str', 'list', 'dict', 'NoneType', 'tuple', ...
std::string PyTypeName(const Val& v);
bool Truthy(const Val& v);
bool IsIntLike(const Value& v);  // int or bool (Python bool is an int)
int64_t IntOf(const Value& v);   // REQUIRES: IsIntLike
bool IsNumLike(const Value& v);  // int, bool or float
double NumOf(const Value& v);    // REQUIRES: IsNumLike

// True when `v` nests arrays/objects more than `limit` levels deep (bounded recursion: at most limit + 1 frames).
bool NestedDeeperThan(const Value& v, int limit);
// The error for a value nested past kMaxValueDepth.
Status TooDeepValue();

// Python ==. Values nested past kMaxValueDepth compare unequal (CompareOp reports them as errors first).
bool PyEq(const Value& a, const Value& b);
bool PyEqVal(const Val& a, const Val& b);
// Python ordering (-1, 0, 1) for numbers, strings, lists; TypeError otherwise.
Result<int> PyCmp(const Value& a, const Value& b, std::string_view op = "<");
Result<Val> BinaryOp(int op, const Val& a, const Val& b);    // op: BinOp
Result<bool> CompareOp(int op, const Val& a, const Val& b);  // op: CmpOp
Result<Val> Negate(const Val& a, bool minus);
Result<bool> Contains(const Val& container, const Val& item);

// Jinja's environment.getattr / getitem (attribute first or item first, then the other; missing = Undefined).
Result<Val> GetAttr(const Val& obj, std::string_view name);
Result<Val> GetItem(const Val& obj, const Val& key);
Result<Val> SliceOf(const Val& obj, const Val* start, const Val* stop, const Val* step);

// Materializes an iterable: list/tuple elements, string code points, dict keys; Undefined yields nothing.
// Elements borrow from `holder` where possible; `holder` must outlive them.
Result<std::vector<Val>> Iterate(const Val& holder);
// Builds an array Val from elements (copies).
Val MakeList(const std::vector<Val>& items, Shape shape = Shape::kPlain);

// Printing (Python str()) and repr().
void AppendStr(const Val& v, std::string* out);
std::string StrOf(const Val& v);
void AppendStrValue(const Value& v, std::string* out);
void AppendRepr(const Value& v, std::string* out, bool tuple = false);
void AppendReprString(std::string_view s, std::string* out);

// `fmt % args` (printf-style) and str.format.
Result<std::string> PercentFormat(std::string_view fmt, const Val& args);
Result<std::string> StrFormat(std::string_view fmt, const std::vector<Val>& args,
                              const std::vector<std::pair<std::string, Val>>& kwargs);
// Python format(value, spec) for one value.
Result<std::string> FormatSpec(const Val& v, std::string_view spec);
// Jinja's htmlsafe_json_dumps: json.dumps(sort_keys=True, ensure_ascii) then <>&' as \u escapes.
Result<std::string> HtmlSafeJson(const Val& v, int indent);

// Calls method `name` on a plain value (str/dict/list methods). found=false when there is no such method.
Result<Val> CallMethod(const Val& self, std::string_view name, const std::vector<Val>& args,
                       const std::vector<std::pair<std::string, Val>>& kwargs, bool* found);
bool HasMethod(const Value& self, std::string_view name);

}  // namespace mmirage::tmpl::internal
