#include "data/tagged_json.h"

#include <cstdint>

#include "data/json.h"

namespace mmirage {
namespace {

constexpr std::string_view kTag("\0b64:", 5);

int Sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

void AppendJsonTagged(const Value& v, std::string* out) {
  JsonWriteOptions o;
  o.bytes = JsonWriteOptions::Bytes::kTagged;  // writes kTag + base64, escaped as "\u0000b64:..."
  (void)AppendJson(v, o, out);                 // cannot fail: no limits
}

bool DecodeBase64(std::string_view in, std::string* out) {
  out->clear();
  if (in.size() % 4 != 0) return false;
  out->reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    int a = Sextet(in[i]), b = Sextet(in[i + 1]);
    bool last = i + 4 == in.size();
    int c = (last && in[i + 2] == '=') ? -2 : Sextet(in[i + 2]);
    int d = (last && in[i + 3] == '=') ? -2 : Sextet(in[i + 3]);
    if (a < 0 || b < 0 || c == -1 || d == -1 || (c == -2 && d != -2)) return false;
    uint32_t n = (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c < 0 ? 0 : c) << 6) | uint32_t(d < 0 ? 0 : d);
    out->push_back(static_cast<char>(n >> 16));
    if (c >= 0) out->push_back(static_cast<char>((n >> 8) & 0xff));
    if (d >= 0) out->push_back(static_cast<char>(n & 0xff));
  }
  return true;
}

bool UntagBytes(Value* v) {
  switch (v->type()) {
    case Value::Type::kString: {
      const std::string& s = v->as_string();
      if (s.size() < kTag.size() || s[0] != '\0' || std::string_view(s).substr(0, kTag.size()) != kTag) return true;
      std::string data;
      if (!DecodeBase64(std::string_view(s).substr(kTag.size()), &data)) return false;
      *v = Value::Bytes(std::move(data));
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
    default:
      return true;
  }
}

}  // namespace mmirage
