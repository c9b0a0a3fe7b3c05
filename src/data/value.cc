#include "data/value.h"

#include <algorithm>
#include <atomic>
#include <unordered_map>

namespace mmirage {

void Value::CopyFrom(const Value& o) {
  type_ = o.type_;
  switch (o.type_) {
    case Type::kString:
    case Type::kBytes: new (&s_) std::string(o.s_); break;
    case Type::kArray: new (&a_) std::shared_ptr<Array>(o.a_); break;
    case Type::kObject: new (&o_) std::shared_ptr<Object>(o.o_); break;
    default: i_ = o.i_; break;  // bool/int/double share the 8 bytes
  }
}

void Value::MoveFrom(Value&& o) noexcept {
  type_ = o.type_;
  switch (o.type_) {
    case Type::kString:
    case Type::kBytes: new (&s_) std::string(std::move(o.s_)); break;
    case Type::kArray: new (&a_) std::shared_ptr<Array>(std::move(o.a_)); break;
    case Type::kObject: new (&o_) std::shared_ptr<Object>(std::move(o.o_)); break;
    default: i_ = o.i_; break;
  }
  o.Destroy();
}

// use_count() is a relaxed load: reading 1 does not by itself order our writes after the reads another thread
// made before it dropped its reference (the drop is a release). The acquire fence after the load does (fence
// synchronisation), so in-place writes on a container we own alone never race with its former sharers.
namespace {
template <typename T>
bool Unshared(const std::shared_ptr<T>& p) {
  if (p.use_count() != 1) return false;
  std::atomic_thread_fence(std::memory_order_acquire);
  return true;
}
}  // namespace

void Value::DetachNested() noexcept {
  std::atomic_thread_fence(std::memory_order_acquire);  // the caller saw use_count() == 1: see Unshared
  // Move every uniquely-owned non-empty child container into `pending`, then free them one by one: each is freed
  // after its own children were moved out, so no destructor recurses more than one level.
  std::vector<Value> pending;
  auto steal = [&pending](Value& v) {
    auto take = [&pending](Value& c) {
      if ((c.type_ == Type::kArray && c.a_.use_count() == 1 && !c.a_->empty()) ||
          (c.type_ == Type::kObject && c.o_.use_count() == 1 && !c.o_->empty())) {
        std::atomic_thread_fence(std::memory_order_acquire);  // see Unshared
        pending.push_back(std::move(c));
      }
    };
    if (v.type_ == Type::kArray) {
      for (Value& c : *v.a_) take(c);
    } else if (v.type_ == Type::kObject) {
      for (auto& m : *v.o_) take(m.second);
    }
  };
  steal(*this);
  while (!pending.empty()) {
    Value v = std::move(pending.back());
    pending.pop_back();
    steal(v);
  }
}

Value::Array& Value::mutable_array() {
  if (!Unshared(a_)) a_ = std::make_shared<Array>(*a_);
  return *a_;
}

Value::Object& Value::mutable_object() {
  if (!Unshared(o_)) o_ = std::make_shared<Object>(*o_);
  return *o_;
}

const Value* Value::Find(std::string_view key) const {
  if (type_ != Type::kObject) return nullptr;
  for (const auto& m : *o_) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

Value Value::ObjectFromMembers(Object members) {
  std::unordered_map<std::string_view, size_t> first;
  first.reserve(members.size());
  Object out;
  out.reserve(members.size());
  for (auto& m : members) {
    auto it = first.find(m.first);
    if (it != first.end()) {
      out[it->second].second = std::move(m.second);
    } else {
      out.push_back(std::move(m));
      first.emplace(out.back().first, out.size() - 1);  // `out` never reallocates (reserved above)
    }
  }
  return Value(std::move(out));
}

void Value::Set(std::string_view key, Value v) {
  Object& o = mutable_object();
  for (auto& m : o) {
    if (m.first == key) {
      m.second = std::move(v);
      return;
    }
  }
  o.emplace_back(std::string(key), std::move(v));
}

size_t Value::size() const {
  switch (type_) {
    case Type::kArray: return a_->size();
    case Type::kObject: return o_->size();
    case Type::kString:
    case Type::kBytes: return s_.size();
    default: return 0;
  }
}

bool Value::operator==(const Value& other) const {
  if (is_number() && other.is_number()) {
    if (is_int() && other.is_int()) return i_ == other.i_;
    return as_number() == other.as_number();
  }
  if (type_ != other.type_) return false;
  switch (type_) {
    case Type::kNull: return true;
    case Type::kBool: return b_ == other.b_;
    case Type::kString:
    case Type::kBytes: return s_ == other.s_;
    case Type::kArray: return a_ == other.a_ || *a_ == *other.a_;
    case Type::kObject: {
      if (o_ == other.o_) return true;
      if (o_->size() != other.o_->size()) return false;
      if (o_->size() > 32) {  // wide objects: one hash index instead of a linear Find per member
        std::unordered_map<std::string_view, const Value*> index;
        index.reserve(other.o_->size());
        for (const auto& m : *other.o_) index.emplace(m.first, &m.second);
        for (const auto& m : *o_) {
          auto it = index.find(m.first);
          if (it == index.end() || !(*it->second == m.second)) return false;
        }
        return true;
      }
      for (const auto& m : *o_) {
        const Value* v = other.Find(m.first);
        if (v == nullptr || !(*v == m.second)) return false;
      }
      return true;
    }
    default: return false;
  }
}

const char* Value::TypeName() const {
  switch (type_) {
    case Type::kNull: return "null";
    case Type::kBool: return "boolean";
    case Type::kInt:
    case Type::kDouble: return "number";
    case Type::kString: return "string";
    case Type::kArray: return "array";
    case Type::kObject: return "object";
    case Type::kBytes: return "bytes";
  }
  return "null";
}

}  // namespace mmirage
