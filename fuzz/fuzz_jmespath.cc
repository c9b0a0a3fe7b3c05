// JMESPath compile + evaluate. Input: expression, NUL, JSON document (a non-JSON rest is used as a string).
#include <cstdint>

#include "data/json.h"
#include "fuzz_util.h"
#include "query/jmespath.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [expr, doc] = mmirage::fuzz::SplitAtNul(data, size);
  auto e = mmirage::query::Expression::Compile(expr);
  if (!e.ok()) return 0;
  auto v = mmirage::ParseJson(doc);
  mmirage::Value input = v.ok() ? *v : mmirage::Value(std::string(doc));
  auto r = e->Evaluate(input);
  if (r.ok()) (void)mmirage::ToJson(*r);
  return 0;
}
