#include "data/tagged_json.h"

#include <cstdint>

#include "data/json.h"
#include "util/base64.h"

namespace mmirage {
namespace {

constexpr std::string_view kTag("\0b64:", 5);

}  // namespace

void AppendJsonTagged(const Value& v, std::string* out) {
  JsonWriteOptions o;
  o.bytes = JsonWriteOptions::Bytes::kTagged;  // writes kTag + base64, escaped as "\u0000b64:..."
  (void)AppendJson(v, o, out);                 // cannot fail: no limits
}

bool UntagBytes(Value* v) {
  switch (v->type()) {
    case Value::Type::kString: {
      const std::string& s = v->as_string();
      if (s.size() < kTag.size() || s[0] != '\0' || std::string_view(s).substr(0, kTag.size()) != kTag) return true;
      Result<std::string> data = DecodeBase64(std::string_view(s).substr(kTag.size()));
      if (!data.ok()) return false;
      *v = Value::Bytes(std::move(*data));
      return true;
    }
    case Value::Type::kArray: {
      bool ok = true;
      for (auto& e : v->mutable_array()) ok = UntagBytes(&e) && ok;
      return ok;
    }
    case Value::Type::kObject: {
      bool ok = true;
      for (auto& m : v->mutable_object()) ok = UntagBytes(&m.second) && ok;
      return ok;
    }
    default: return true;
  }
}

}  // namespace mmirage
