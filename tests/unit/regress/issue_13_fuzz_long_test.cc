// Regression tests for issue #13, findings of the long fuzzer runs (fuzz/fuzz_template.cc, fuzz/fuzz_config.cc).
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "config/config.h"
#include "data/json.h"
#include "template/template.h"

namespace mmirage {
namespace {

// fuzz_template: `{% filter %}` without a filter name parsed to a null filter chain, dereferenced at render time
// (UBSan: reference binding to null pointer in Renderer::ExecStmt). It is now a parse error, as in Jinja.
TEST(Issue13FuzzLong, FilterBlockWithoutANameIsAParseError) {
  for (const char* src :
       {"{% filter %}x{% endfilter %}", "{% filter%}ss{{ s }}{% endfilter %}", "{%filter-%}a{%endfilter%}"}) {
    auto t = tmpl::Template::Parse(src);
    ASSERT_FALSE(t.ok()) << src;
    EXPECT_NE(t.status().message().find("line 1"), std::string::npos) << t.status().ToString();
    EXPECT_NE(t.status().message().find("filter"), std::string::npos) << t.status().ToString();
  }
  auto good = tmpl::Template::Parse("{% filter upper %}ab{% endfilter %}");
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  auto out = good->Render(*ParseJson("{}"));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "AB");
}

// Parses and renders `src` with an empty context; a parse error fails the test.
Result<std::string> RenderEmpty(const std::string& src) {
  auto t = tmpl::Template::Parse(src);
  EXPECT_TRUE(t.ok()) << src << ": " << t.status().ToString();
  if (!t.ok()) return t.status();
  return t->Render(*ParseJson("{}"));
}

// fuzz_template: iterating a string (`|list`, `|join`, a for loop) made one item per code point with no bound: a
// string near the 256 MiB string limit became hundreds of millions of items and exhausted memory. A string with
// more code points than the list limit (16,777,216) is now a "list too large" error; smaller ones still iterate.
TEST(Issue13FuzzLong, IteratingAHugeStringIsBoundedByTheListLimit) {
  auto out = RenderEmpty("{{ ('x' * 17000000)|list|length }}");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("list too large"), std::string::npos) << out.status().ToString();
  auto ok = RenderEmpty("{{ ('xé' * 3)|list|join('-') }}");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, "x-é-x-é-x-é");
}

// fuzz_template (session 3, 30-minute run): the bound above counted UTF-8 lead bytes, but each byte of invalid
// UTF-8 (e.g. a stray continuation byte 0xB2) is an item of its own: 200 MB of them passed the check as zero code
// points and built 200 million items (a 3.8 GB allocation). They count now.
TEST(Issue13FuzzLong, IteratingInvalidUtf8CountsEveryByteAgainstTheListLimit) {
  auto out = RenderEmpty("{{ ('\xb2' * 17000000)|join(',')|length }}");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("list too large"), std::string::npos) << out.status().ToString();
  auto ok = RenderEmpty("{{ ('a\xb2' * 2)|list|length }}");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, "4");
}

Result<config::Config> Load(const std::string& yaml) {
  config::LoadOptions o;
  o.vars = [](const std::string&) { return std::optional<std::string>(); };
  return config::LoadConfigFromString(yaml, "cfg.yaml", o);
}

std::string Config(const std::string& extra_engine_args) {
  return "processors:\n"
         "  - type: llm\n"
         "    server_args:\n"
         "      model_path: m.gguf\n"
         "      extra_engine_args:\n"
         "        " +
         extra_engine_args +
         "\n"
         "loading_params:\n"
         "  datasets: [{path: a.jsonl, type: JSONL, output_dir: out}]\n"
         "processing_params:\n"
         "  inputs: [{name: q, key: q}]\n"
         "  outputs: []\n"
         "  output_schema: {q: \"{{ q }}\"}\n";
}

// fuzz_config: `&x [1, *x]` is a cycle in yaml-cpp's node graph; converting it to a Value recursed until the stack
// overflowed (ASan: stack-overflow in NodeToValue). It is now a located config error.
TEST(Issue13FuzzLong, RecursiveAliasIsAConfigErrorNotAStackOverflow) {
  auto c = Load(Config("max_running_requests: &x [1, s2, *x]"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cfg.yaml:"), std::string::npos) << c.status().ToString();
  EXPECT_NE(c.status().message().find("deeper than 200"), std::string::npos) << c.status().ToString();
  EXPECT_EQ(c.status().message().find('\n'), std::string::npos) << c.status().ToString();
}

// Same family: nested aliases that expand exponentially ("billion laughs") are an error, not minutes of CPU and
// gigabytes of memory.
TEST(Issue13FuzzLong, ExponentialAliasesAreAConfigError) {
  std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    std::string p = "*a" + std::to_string(i - 1);
    yaml += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + p;
    for (int k = 0; k < 9; ++k) yaml += ", " + p;
    yaml += "]\n";
  }
  yaml += Config("{}");
  auto c = Load(yaml);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("more than 1000000 nodes"), std::string::npos) << c.status().ToString();
}

// The bounds leave real configs alone: a legal alias (reused, not recursive) still loads.
TEST(Issue13FuzzLong, PlainAliasesStillLoad) {
  auto c = Load(Config("{a: &v [1, 2], b: *v}"));
  EXPECT_TRUE(c.ok()) << c.status().ToString();
}

}  // namespace
}  // namespace mmirage
