// Value: the JSON-shaped value every row, variable and output is made of.
//
// Null, bool, 64-bit int, double, string, array, object (keys kept in insertion order, as Python dicts and HF datasets
// keep them) and bytes (binary data, e.g. an image's file content from an Arrow binary column; JSON has no bytes, so
// JSON text holds them as a base64 string). Arrays and objects are shared and copy-on-write, so copying a Value is
// cheap (one refcount) and values can be passed between stages without deep copies.
// Equality is JSON equality: 1 == 1.0, object equality ignores key order.
// Thread-safety: a Value may be read from several threads; mutating one that shares its storage copies first,
// so mutation never affects other holders — but a single Value must not be mutated concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mmirage {

class Value {
 public:
  enum class Type : uint8_t { kNull, kBool, kInt, kDouble, kString, kArray, kObject, kBytes };
  using Array = std::vector<Value>;
  using Member = std::pair<std::string, Value>;
  using Object = std::vector<Member>;

  Value() : type_(Type::kNull), i_(0) {}                                                 // null
  Value(std::nullptr_t) : Value() {}                                                     // NOLINT
  Value(bool b) : type_(Type::kBool), i_(0) { b_ = b; }                                  // NOLINT
  Value(int v) : type_(Type::kInt), i_(v) {}                                             // NOLINT
  Value(int64_t v) : type_(Type::kInt), i_(v) {}                                         // NOLINT
  Value(double v) : type_(Type::kDouble), d_(v) {}                                       // NOLINT
  Value(std::string s) : type_(Type::kString), s_(std::move(s)) {}                       // NOLINT
  Value(std::string_view s) : type_(Type::kString), s_(s) {}                             // NOLINT
  Value(const char* s) : type_(Type::kString), s_(s) {}                                  // NOLINT
  Value(Array a) : type_(Type::kArray), a_(std::make_shared<Array>(std::move(a))) {}     // NOLINT
  Value(Object o) : type_(Type::kObject), o_(std::make_shared<Object>(std::move(o))) {}  // NOLINT
  Value(const Value& other) { CopyFrom(other); }
  Value(Value&& other) noexcept { MoveFrom(std::move(other)); }
  Value& operator=(const Value& other) {
    if (this != &other) {
      Value tmp(other);
      Destroy();
      MoveFrom(std::move(tmp));
    }
    return *this;
  }
  Value& operator=(Value&& other) noexcept {
    if (this != &other) {
      Destroy();
      MoveFrom(std::move(other));
    }
    return *this;
  }
  ~Value() { Destroy(); }
  // A bytes value holding `data` (any bytes, not necessarily UTF-8).
  static Value Bytes(std::string data) {
    Value v(std::move(data));
    v.type_ = Type::kBytes;
    return v;
  }
  static Value EmptyArray() { return Value(Array{}); }
  static Value EmptyObject() { return Value(Object{}); }

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_int() const { return type_ == Type::kInt; }
  bool is_double() const { return type_ == Type::kDouble; }
  bool is_number() const { return type_ == Type::kInt || type_ == Type::kDouble; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }
  bool is_bytes() const { return type_ == Type::kBytes; }

  // REQUIRES: the matching type (as_number: int or double).
  bool as_bool() const { return b_; }
  int64_t as_int() const { return i_; }
  double as_double() const { return d_; }
  double as_number() const { return type_ == Type::kInt ? static_cast<double>(i_) : d_; }
  const std::string& as_string() const { return s_; }
  const std::string& as_bytes() const { return s_; }
  const Array& as_array() const { return *a_; }
  const Object& as_object() const { return *o_; }
  // Copy-on-write access. REQUIRES: is_array() / is_object().
  Array& mutable_array();
  Object& mutable_object();

  // Object member lookup (linear; rows are small). nullptr when absent or not an object.
  const Value* Find(std::string_view key) const;
  // An object from `members` in order, in linear time: a repeated key keeps its first position and takes the
  // last value (as Python's dict and json do).
  static Value ObjectFromMembers(Object members);
  // Object insert-or-replace, keeping the position of an existing key (linear in the object's size: build wide
  // objects with ObjectFromMembers). REQUIRES: is_object().
  void Set(std::string_view key, Value v);
  // Array append. REQUIRES: is_array().
  void Push(Value v) { mutable_array().push_back(std::move(v)); }

  // Number of elements (array), members (object) or bytes (string, bytes); 0 otherwise.
  size_t size() const;

  bool operator==(const Value& other) const;
  bool operator!=(const Value& other) const { return !(*this == other); }

  // "null", "boolean", "number", "string", "array", "object" (JSON type names, as JMESPath's type()), "bytes".
  const char* TypeName() const;

 private:
  // One active member, chosen by type_ (40 bytes in all; copying shares arrays and objects).
  void CopyFrom(const Value& o);
  void MoveFrom(Value&& o) noexcept;
  // Called when this is the last owner of its array/object: frees nested containers iteratively, so that a value
  // nested far deeper than the stack allows (built by a template loop, say) never overflows it when freed.
  void DetachNested() noexcept;
  void Destroy() {
    switch (type_) {
      case Type::kString:
      case Type::kBytes: s_.~basic_string(); break;
      case Type::kArray:
        if (a_.use_count() == 1) DetachNested();
        a_.~shared_ptr();
        break;
      case Type::kObject:
        if (o_.use_count() == 1) DetachNested();
        o_.~shared_ptr();
        break;
      default: break;
    }
    type_ = Type::kNull;
    i_ = 0;
  }

  Type type_ = Type::kNull;
  union {
    bool b_;
    int64_t i_;
    double d_;
    std::string s_;
    std::shared_ptr<Array> a_;
    std::shared_ptr<Object> o_;
  };
};

}  // namespace mmirage
