// Jinja parse + render with a fuzzed context. Input: template, NUL, JSON context (an object; anything else is
// given as {"x": <value or text>}). UndeclaredVariables and PlainVariable are exercised too.
#include <cstdint>

#include "data/json.h"
#include "fuzz_util.h"
#include "template/template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [src, ctx_text] = mmirage::fuzz::SplitAtNul(data, size);
  auto t = mmirage::tmpl::Template::Parse(src);
  if (!t.ok()) return 0;
  (void)t->UndeclaredVariables();
  (void)t->PlainVariable();
  auto v = mmirage::ParseJson(ctx_text);
  mmirage::Value ctx = mmirage::Value::EmptyObject();
  if (v.ok() && v->is_object()) {
    ctx = *v;
  } else {
    ctx.Set("x", v.ok() ? *v : mmirage::Value(std::string(ctx_text)));
  }
  (void)t->Render(ctx);
  return 0;
}
