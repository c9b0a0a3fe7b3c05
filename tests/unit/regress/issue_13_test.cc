// Regression tests for issue #13: hostile but legal data, templates and expressions never crash the process,
// never exhaust memory or time, and fail the row with a clear message instead. Each case names the finding.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "data/json.h"
#include "query/jmespath.h"
#include "template/template.h"

namespace mmirage {
namespace {

std::string Rep(std::string_view s, size_t n) {
  std::string r;
  r.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) r += s;
  return r;
}

Value Ctx(std::string_view json) {
  auto v = ParseJson(json);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : Value();
}

// "OK:<output>" or "ERR:<message>" (parse and render errors alike).
std::string Render(std::string_view src, std::string_view ctx = "{}") {
  auto t = tmpl::Template::Parse(src);
  if (!t.ok()) return "ERR:" + t.status().ToString();
  auto out = t->Render(Ctx(ctx));
  if (!out.ok()) return "ERR:" + out.status().ToString();
  return "OK:" + *out;
}

std::string Query(std::string_view expr, std::string_view data = "{}") {
  auto e = query::Expression::Compile(expr);
  if (!e.ok()) return "ERR:" + e.status().ToString();
  auto out = e->Evaluate(Ctx(data));
  if (!out.ok()) return "ERR:" + out.status().ToString();
  return "OK:" + ToJson(*out);
}

bool IsErr(const std::string& r, std::string_view needle = "") {
  return r.rfind("ERR:", 0) == 0 && r.find(needle) != std::string::npos;
}

constexpr const char* kMinMinus1 = R"({"a": -9223372036854775808, "b": -1})";

// ---- arithmetic edge cases ----------------------------------------------------------------------------------------
TEST(Issue13Template, Int64MinDividedByMinusOneIsAFloatNotSigfpe) {
  EXPECT_EQ(Render("{{ a / b }}", kMinMinus1), "OK:9.223372036854776e+18");
  EXPECT_TRUE(IsErr(Render("{{ a // b }}", kMinMinus1), "integer overflow"));
  EXPECT_EQ(Render("{{ a % b }}", kMinMinus1), "OK:0");
  EXPECT_TRUE(IsErr(Render("{{ -a }}", kMinMinus1), "integer overflow"));
  EXPECT_TRUE(IsErr(Render("{{ a * b }}", kMinMinus1), "integer overflow"));
  EXPECT_TRUE(IsErr(Render("{{ a|abs }}", kMinMinus1), "integer overflow"));
  EXPECT_TRUE(IsErr(Render("{{ b ** 9223372036854775807 }}", kMinMinus1)) ||
              Render("{{ b ** 9223372036854775807 }}", kMinMinus1) == "OK:-1");
}

// ---- str.format / % formatting --------------------------------------------------------------------------------------
TEST(Issue13Template, FormatWithHugeFieldNumberIsAnError) {
  EXPECT_TRUE(IsErr(Render("{{ s.format() }}", R"({"s": "{99999999999999999999}"})"), "Too many decimal digits"));
  EXPECT_TRUE(IsErr(Render("{{ s.format(1) }}", R"({"s": "{1}"})"), "Replacement index"));
  EXPECT_TRUE(IsErr(Render("{{ s.format(1) }}", R"({"s": "{0:99999999999999999999}"})")));
  EXPECT_TRUE(IsErr(Render("{{ s.format(1) }}", R"({"s": "{0:.99999999999999999999}"})")));
  EXPECT_TRUE(IsErr(Render("{{ s.format(1) }}", R"({"s": "{0:1000000000000}"})"), "too large"));
  EXPECT_TRUE(IsErr(Render("{{ s.format(x=1) }}", R"({"s": "{x[99999999999999999999]}"})")));
}

TEST(Issue13Template, PercentFormatWidthsAreBounded) {
  EXPECT_TRUE(IsErr(Render("{{ '%*d' % (1000000000000, 1) }}"), "too large"));
  EXPECT_TRUE(IsErr(Render("{{ '%*d' % (-1000000000000, 1) }}"), "too large"));
  EXPECT_TRUE(IsErr(Render("{{ '%1000000000000d' % 1 }}"), "too large"));
  EXPECT_TRUE(IsErr(Render("{{ '%.1000000000000f' % 1.5 }}"), "too large"));
  EXPECT_TRUE(IsErr(Render("{{ '%99999999999999999999d' % 1 }}")));
  EXPECT_TRUE(IsErr(Render("{{ '%*d' % (9223372036854775807, 1) }}")));
  EXPECT_TRUE(IsErr(Render("{{ '%*d' % (m, 1) }}", R"({"m": -9223372036854775808})")));
}

TEST(Issue13Template, PercentCOfInvalidCodePointIsAnError) {
  EXPECT_TRUE(IsErr(Render("{{ '%c' % 1114112 }}"), "range(0x110000)"));
  EXPECT_TRUE(IsErr(Render("{{ '%c' % -1 }}"), "range(0x110000)"));
  EXPECT_TRUE(IsErr(Render("{{ '%c' % 55296 }}"), "surrogate"));
  EXPECT_EQ(Render("{{ '%c' % 233 }}"), "OK:\xc3\xa9");
  EXPECT_TRUE(IsErr(Render("{{ '{:c}'.format(1114112) }}")));
  EXPECT_TRUE(IsErr(Render("{{ '{:c}'.format(55296) }}")));
}

// ---- sizes: repeats, paddings, ranges, batch/slice ------------------------------------------------------------------
TEST(Issue13Template, HugeRepeatIsAnErrorNotOom) {
  EXPECT_TRUE(IsErr(Render("{{ 'x' * n }}", R"({"n": 4611686018427387904})"), "too large"));
  EXPECT_TRUE(IsErr(Render("{{ 'abcd' * n }}", R"({"n": 4611686018427387904})"), "too large"));  // wraps 2^64
  EXPECT_TRUE(IsErr(Render("{{ [1, 2, 3, 4] * n }}", R"({"n": 4611686018427387904})"), "too large"));
  EXPECT_TRUE(IsErr(Render("{{ n * 'x' }}", R"({"n": 4611686018427387904})"), "too large"));
}

TEST(Issue13Template, EmptyTimesHugeIsInstant) {
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Render("{{ '' * 9223372036854775807 }}|{{ ([] * 9223372036854775807)|length }}"), "OK:|0");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(Issue13Template, HugePaddingsAreErrors) {
  for (const char* src :
       {"{{ 'x'|center(1000000000000) }}", "{{ 'x'.center(1000000000000) }}", "{{ 'x'.ljust(1000000000000) }}",
        "{{ 'x'.rjust(1000000000000) }}", "{{ 'x'.zfill(1000000000000) }}", "{{ 'a\nb'|indent(1000000000000) }}",
        "{{ 'a\tb'.expandtabs(1000000000000) }}", "{{ 'x'|truncate(1000000000000) }}",
        "{{ 'abc'.replace('', 'x' * 100000000) }}", "{{ 'a b'|wordwrap(1000000000000) }}",
        "{{ 'x'|center(9223372036854775807) }}", "{{ 'a\nb'|indent(9223372036854775807) }}"}) {
    std::string r = Render(src);
    EXPECT_TRUE(IsErr(r) || r.size() < (1u << 20)) << src << " -> " << r.substr(0, 200);
  }
}

TEST(Issue13Template, HugeRangesBatchesAndSlicesAreErrors) {
  EXPECT_TRUE(IsErr(Render("{{ range(1000000000000)|list|length }}"), "too large"));
  const char* m = R"({"m": -9223372036854775808})";
  EXPECT_TRUE(IsErr(Render("{{ range(m, 9223372036854775807)|list|length }}", m), "too large"));
  EXPECT_EQ(Render("{{ range(0, 9223372036854775807, 4611686018427387904)|list }}"), "OK:[0, 4611686018427387904]");
  EXPECT_EQ(Render("{{ range(9223372036854775807, m, -9223372036854775807)|list|length }}", m), "OK:3");
  EXPECT_EQ(Render("{{ [1, 2, 3]|batch(1000000000000)|list }}"), "OK:[[1, 2, 3]]");
  EXPECT_TRUE(IsErr(Render("{{ [1, 2, 3]|batch(1000000000000, 'x')|list }}"), "too large"));
  EXPECT_TRUE(IsErr(Render("{{ [1, 2, 3]|slice(1000000000000)|list }}"), "too large"));
  EXPECT_TRUE(IsErr(Render("{{ [1, 2, 3]|batch(0)|list }}")));
  EXPECT_TRUE(IsErr(Render("{{ [1, 2, 3]|slice(0)|list }}")));
}

TEST(Issue13Template, SlicesWithHugeStepsStayInBounds) {
  // Jinja literals are int64 (a bigger literal is a parse error), so INT64_MIN comes from the row as `m`.
  const char* ctx = R"({"s": "abc", "l": [1, 2, 3], "m": -9223372036854775808})";
  EXPECT_EQ(Render("{{ s[::9223372036854775807] }}", ctx), "OK:a");
  EXPECT_EQ(Render("{{ s[::m] }}", ctx), "OK:c");
  EXPECT_EQ(Render("{{ s[m:9223372036854775807] }}", ctx), "OK:abc");
  EXPECT_EQ(Render("{{ l[::9223372036854775807] }}", ctx), "OK:[1]");
  EXPECT_EQ(Render("{{ l[::m] }}", ctx), "OK:[3]");
  EXPECT_EQ(Render("{{ l[9223372036854775807::-9223372036854775807] }}", ctx), "OK:[3]");
  EXPECT_EQ(Render("{{ l[m::9223372036854775807] }}", ctx), "OK:[1]");
  EXPECT_EQ(Render("{{ l[1:m:-1] }}", ctx), "OK:[2, 1]");
  EXPECT_EQ(Render("{{ s[m] }}", ctx), "OK:");
}

// ---- rendered size and time budgets ---------------------------------------------------------------------------------
TEST(Issue13Template, RenderedSizeIsBounded) {
  EXPECT_TRUE(IsErr(Render("{% set s = 'x' * 10000000 %}{% for i in range(100) %}{{ s }}{% endfor %}"),
                    "rendered text too large"));
  EXPECT_TRUE(IsErr(Render("{% set ns = namespace(s='xx') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
                           "{% endfor %}{{ ns.s|length }}"),
                    "too large"));
  EXPECT_TRUE(IsErr(Render("{% set l = range(10000000)|list %}{{ (l + l)|length }}"), "list too large"));
  EXPECT_TRUE(IsErr(Render("{% set ns = namespace(s='xx') %}{% for i in range(64) %}{% set ns.s = [ns.s, ns.s]|join %}"
                           "{% endfor %}{{ ns.s|length }}"),
                    "too large"));
}

TEST(Issue13Template, LoopIterationsAreBounded) {
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(IsErr(Render("{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}"),
                    "too many loop iterations"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
}

// ---- nesting depth: parse and render --------------------------------------------------------------------------------
TEST(Issue13Template, DeepNestingAtParseTimeIsAnError) {
  const size_t n = 100000;
  std::vector<std::string> srcs = {
      "{{ " + Rep("(", n) + "1" + Rep(")", n) + " }}",
      "{{ " + Rep("[", n) + "1" + Rep("]", n) + " }}",
      "{{ " + Rep("{'a': ", n) + "1" + Rep("}", n) + " }}",
      "{{ " + Rep("not ", n) + "1 }}",
      "{{ " + Rep("-", n) + "1 }}",
      "{{ 1" + Rep(" + 1", n) + " }}",
      "{{ 2" + Rep(" ** 2", n) + " }}",
      "{{ x" + Rep("|string", n) + " }}",
      "{{ x" + Rep(".a", n) + " }}",
      "{{ x" + Rep("[0]", n) + " }}",
      "{{ x" + Rep("()", n) + " }}",
      "{{ 1" + Rep(" if 1 else 1", n) + " }}",
      "{{ x" + Rep(" is defined", 1) + Rep(" and 1", n) + " }}",
      Rep("{% if 1 %}", n) + Rep("{% endif %}", n),
      Rep("{% for i in [1] %}", n) + Rep("{% endfor %}", n),
      Rep("{% filter upper %}", n) + Rep("{% endfilter %}", n),
      "{{ f(" + Rep("f(", n) + Rep(")", n) + ") }}",
  };
  for (const auto& s : srcs) {
    std::string r = Render(s, R"({"x": "a"})");
    EXPECT_TRUE(IsErr(r, "too deep")) << s.substr(0, 40) << " -> " << r.substr(0, 200);
  }
  // Moderate nesting still works.
  EXPECT_EQ(Render("{{ " + Rep("(", 50) + "1" + Rep(")", 50) + " }}"), "OK:1");
  EXPECT_EQ(Render("{{ 1" + Rep(" + 1", 200) + " }}"), "OK:201");
  EXPECT_EQ(Render("{{ 1" + Rep(" == 1", n) + " }}"), "OK:True");  // a flat comparison chain is not nested
}

TEST(Issue13Template, DeepNestingAtRenderTimeIsAnError) {
  EXPECT_TRUE(IsErr(Render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), "recursion"));
  // A value nested deeper than any printer can walk: built by the template itself.
  std::string r = Render(
      "{% set ns = namespace(x=1) %}{% for i in range(200000) %}{% set ns.x = [ns.x] %}{% endfor %}"
      "{{ ns.x }}");
  EXPECT_TRUE(IsErr(r, "too deep")) << r.substr(0, 200);
  r = Render(
      "{% set ns = namespace(x=1) %}{% for i in range(200000) %}{% set ns.x = [ns.x] %}{% endfor %}"
      "{{ ns.x|tojson }}");
  EXPECT_TRUE(IsErr(r, "too deep")) << r.substr(0, 200);
  r = Render(
      "{% set ns = namespace(x=1) %}{% for i in range(200000) %}{% set ns.x = {'a': ns.x} %}{% endfor %}"
      "{{ ns.x == ns.x }}");
  EXPECT_TRUE(IsErr(r, "too deep") || r == "OK:True") << r.substr(0, 200);
  // Deep data from a row prints (simdjson accepts up to 1024 levels).
  std::string deep = Rep("[", 1000) + Rep("]", 1000);
  r = Render("{{ x|length }}", "{\"x\": " + deep + "}");
  EXPECT_EQ(r, "OK:1");
}

TEST(Issue13Template, RendersOnSmallWorkerThreadsDoNotOverflow) {
  // Worker threads run templates: the limits must hold on a thread's default stack.
  std::string r;
  std::thread t([&] { r = Render("{{ " + Rep("(", 100000) + "1" + Rep(")", 100000) + " }}"); });
  t.join();
  EXPECT_TRUE(IsErr(r, "too deep"));
}

// ---- JMESPath
// --------------------------------------------------------------------------------------------------------
TEST(Issue13Jmespath, DeepNestingIsAnError) {
  const size_t n = 100000;
  std::vector<std::string> exprs = {
      Rep("(", n) + "a" + Rep(")", n),
      Rep("[", n) + "a" + Rep("]", n),
      Rep("!", n) + "a",
      "a" + Rep(".a", n),
      "a" + Rep("|a", n),
      "a" + Rep("[0]", n),
      "a" + Rep("[*]", n),
      "a" + Rep("[]", n),
      "a" + Rep(" || a", n),
      "a" + Rep(" && a", n),
      Rep("{a: ", n) + "a" + Rep("}", n),
      Rep("abs(", n) + "a" + Rep(")", n),
      "a" + Rep("[?a]", n),
      Rep("& ", n) + "a",
      "a" + Rep(".b[0].c", n),
  };
  for (const auto& e : exprs) {
    std::string r = Query(e, R"({"a": 1})");
    EXPECT_TRUE(IsErr(r, "too deep")) << e.substr(0, 40) << " -> " << r.substr(0, 200);
  }
  EXPECT_EQ(Query("a" + Rep(".a", 100), R"({"a": 1})"), "OK:null");
}

TEST(Issue13Jmespath, SlicesWithHugeStepsStayInBounds) {
  const char* d = R"({"l": [1, 2, 3], "s": "abc"})";
  EXPECT_EQ(Query("l[::9223372036854775807]", d), "OK:[1]");
  EXPECT_EQ(Query("l[::-9223372036854775808]", d), "OK:[3]");
  EXPECT_EQ(Query("l[-9223372036854775808:9223372036854775807]", d), "OK:[1,2,3]");
  EXPECT_EQ(Query("l[9223372036854775807::-9223372036854775807]", d), "OK:[3]");
  EXPECT_EQ(Query("l[1:-9223372036854775808:-1]", d), "OK:[2,1]");
  EXPECT_EQ(Query("l[99999999999999999999999:]", d), "OK:[]");
  EXPECT_EQ(Query("l[-99999999999999999999999]", d), "OK:null");
}

TEST(Issue13Jmespath, NumbersNeverOverflow) {
  EXPECT_EQ(Query("abs(@)", "-9223372036854775808"), "OK:9.223372036854776e+18");
  EXPECT_EQ(Query("sum(@)", "[9223372036854775807, 1]"), "OK:9.223372036854776e+18");
  EXPECT_EQ(Query("to_number('99999999999999999999')", "{}"), "OK:1e+20");
  std::string r = Query("to_number('1e999')", "{}");
  EXPECT_TRUE(r == "OK:null" || IsErr(r)) << r;
  r = Query("avg(@)", "[1.7976931348623157e308, 1.7976931348623157e308]");
  EXPECT_TRUE(r.find("inf") == std::string::npos) << r;
}

// ---- Data: a 300k-key row -------------------------------------------------------------------------------------------
TEST(Issue13Data, WideObjectsParseInLinearTime) {
  std::string j = "{";
  const int n = 300000;
  for (int i = 0; i < n; ++i) {
    if (i) j += ',';
    j += "\"k" + std::to_string(i) + "\":" + std::to_string(i);
  }
  j += ",\"k5\":-5}";
  auto t0 = std::chrono::steady_clock::now();
  auto v = ParseJson(j);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->size(), static_cast<size_t>(n));
  ASSERT_NE(v->Find("k5"), nullptr);
  EXPECT_EQ(v->Find("k5")->as_int(), -5);  // the last duplicate wins, at the first one's position
  EXPECT_EQ(v->as_object()[5].first, "k5");
  Value copy = *v;
  EXPECT_TRUE(copy == *v);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
}

// ---- fuzzer findings -----------------------------------------------------------------------------------------------
// fuzz_json/fuzz_template/fuzz_journal: ParseJson("") passed a null pointer to memcpy (UBSan).
TEST(Issue13Fuzz, EmptyJsonIsAnErrorWithoutUndefinedBehaviour) {
  EXPECT_FALSE(ParseJson(std::string_view()).ok());
  EXPECT_FALSE(ParseJson("").ok());
}

// fuzz_config: a dataset without `path` made yaml-cpp throw InvalidNode (an uncaught exception: abort).
TEST(Issue13Fuzz, DatasetWithoutPathIsAConfigErrorNotAnAbort) {
  config::LoadOptions o;
  o.vars = [](const std::string&) { return std::optional<std::string>(); };
  auto c = config::LoadConfigFromString(
      "processors: []\n"
      "loading_params:\n"
      "  datasets:\n"
      "    - {tyloading_paramsh: \"a/*.jsonl\", output_dir: out, split: train}\n"
      "processing_params:\n"
      "  inputs: [{name: q, key: q}]\n"
      "  outputs: []\n"
      "  output_schema: {q: \"{{ q }}\"}\n",
      "cfg.yaml", o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cfg.yaml"), std::string::npos) << c.status().ToString();
}

}  // namespace
}  // namespace mmirage
