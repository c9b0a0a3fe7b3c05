// Unit tests for the Jinja2 engine: rendering rules (spec pipeline.md §6.1), error paths, PlainVariable (§7.1),
// UndeclaredVariables and PyStr.
#include "template/template.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "data/json.h"

namespace mmirage::tmpl {
namespace {

Value Ctx(std::string_view json) {
  auto v = ParseJson(json);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : Value();
}

std::string Render(std::string_view src, std::string_view ctx = "{}") {
  auto t = Template::Parse(src);
  if (!t.ok()) return "PARSE ERROR: " + t.status().ToString();
  auto out = t->Render(Ctx(ctx));
  if (!out.ok()) return "RENDER ERROR: " + out.status().ToString();
  return *out;
}

Status ParseError(std::string_view src) {
  auto t = Template::Parse(src);
  return t.ok() ? Status::OK() : t.status();
}

Status RenderError(std::string_view src, std::string_view ctx = "{}") {
  auto t = Template::Parse(src);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) return t.status();
  auto out = t->Render(Ctx(ctx));
  return out.ok() ? Status::OK() : out.status();
}

class TemplateTest : public ::testing::Test {};

TEST_F(TemplateTest, PrintsValuesAsPythonStr) {
  EXPECT_EQ(Render("{{ a }}|{{ b }}|{{ c }}|{{ d }}|{{ e }}|{{ f }}",
                   R"({"a": null, "b": true, "c": 2.5, "d": 1e20, "e": [1, "a", null], "f": {"k": "v"}})"),
            "None|True|2.5|1e+20|[1, 'a', None]|{'k': 'v'}");
  EXPECT_EQ(Render("{{ x }}", R"({"x": ["it's", "say \"hi\"", "a\nb", "back\\slash"]})"),
            R"(["it's", 'say "hi"', 'a\nb', 'back\\slash'])");
  EXPECT_EQ(Render("{{ 0.1 }} {{ 1.0 }} {{ (1,) }} {{ (1, 'a') }}"), "0.1 1.0 (1,) (1, 'a')");
}

TEST_F(TemplateTest, BytesPrintAsPythonRepr) {
  auto t = Template::Parse("{{ b }}|{{ b | length }}|{{ b is string }}");
  ASSERT_TRUE(t.ok());
  Value ctx = Value::EmptyObject();
  ctx.Set("b", Value::Bytes(std::string("a'\n\x00\xff", 5)));
  auto out = t->Render(ctx);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "b\"a'\\n\\x00\\xff\"|5|False");
}

TEST_F(TemplateTest, UndefinedNamePrintsEmpty) {
  EXPECT_EQ(Render("[{{ missing }}]"), "[]");
  EXPECT_EQ(Render("{{ missing is defined }}{{ missing is undefined }}"), "FalseTrue");
  EXPECT_EQ(Render("{% for x in missing %}x{% else %}none{% endfor %}"), "none");
}

TEST_F(TemplateTest, AttributeOfUndefinedIsRenderError) {
  Status st = RenderError("line one\n{{ missing.x }}");
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.message(), "line 2: 'missing' is undefined");
  st = RenderError("{{ d.a.b }}", R"({"d": {}})");
  EXPECT_EQ(st.message(), "line 1: 'dict object' has no attribute 'a'");
}

TEST_F(TemplateTest, MapLookupAndMissingKeys) {
  EXPECT_EQ(Render("{{ m.k }}|{{ m.zz }}|{{ s.k }}|{{ n.k }}", R"({"m": {"k": "v"}, "s": "str", "n": 5})"), "v|||");
  EXPECT_EQ(Render("{{ m['k'] }}{{ l[1] }}{{ l[-1] }}{{ l[9] }}", R"({"m": {"k": "v"}, "l": [1, 2, 3]})"), "v23");
}

TEST_F(TemplateTest, SingleTrailingNewlineIsRemoved) {
  EXPECT_EQ(Render("a\n"), "a");
  EXPECT_EQ(Render("a\n\n"), "a\n");
  EXPECT_EQ(Render("  a  "), "  a  ");
}

TEST_F(TemplateTest, ArithmeticFollowsPython) {
  EXPECT_EQ(Render("{{ 7 / 2 }} {{ 6 / 3 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }}"),
            "3.5 2.0 -4 2 1024 0.5");
  EXPECT_EQ(Render("{{ 'ab' * 2 }} {{ [1] + [2] }} {{ 1 ~ 'x' ~ none }}"), "abab [1, 2] 1xNone");
}

TEST_F(TemplateTest, IntegerOverflowIsAnError) {
  Status st = RenderError("{{ 9223372036854775807 + 1 }}");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("integer overflow"), std::string::npos);
  EXPECT_FALSE(RenderError("{{ 2 ** 64 }}").ok());
}

TEST_F(TemplateTest, DivisionByZeroIsAnError) {
  EXPECT_FALSE(RenderError("{{ 1 / 0 }}").ok());
  EXPECT_FALSE(RenderError("{{ 1 // 0 }}").ok());
}

TEST_F(TemplateTest, UnicodeIsCodePoints) {
  EXPECT_EQ(Render("{{ s|length }} {{ s[1] }} {{ s[::-1] }} {{ s|upper }} {{ s|reverse }}", R"({"s": "héllo"})"),
            "5 é olléh HÉLLO olléh");
  EXPECT_EQ(Render("{{ 'straße'|upper }} {{ 'ÀÉ'|lower }} {{ 'émile zola'|title }}"), "STRASSE àé Émile Zola");
}

TEST_F(TemplateTest, Statements) {
  EXPECT_EQ(Render("{% for k, v in d|dictsort %}{{ loop.index }}{{ k }}{{ v }}{% if not loop.last %},{% endif %}"
                   "{% endfor %}",
                   R"({"d": {"b": 2, "a": 1}})"),
            "1a1,2b2");
  EXPECT_EQ(Render("{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] if i > 1 %}{% set ns.n = ns.n + i %}"
                   "{% endfor %}{{ ns.n }}"),
            "5");
  EXPECT_EQ(Render("{% macro g(n, p='Hi') %}{{ p }} {{ n }}{% endmacro %}{{ g('A') }}/{{ g('B', p='Yo') }}"),
            "Hi A/Yo B");
  EXPECT_EQ(Render("{% raw %}{{ x }}{% endraw %}{# gone #}"), "{{ x }}");
  EXPECT_EQ(Render("a  {%- if true -%}  b  {%- endif %} c"), "ab c");
  EXPECT_EQ(Render("{% set x %}in{{ 1 }}{% endset %}{{ x }}"), "in1");
}

TEST_F(TemplateTest, FiltersAndTests) {
  EXPECT_EQ(Render("{{ 'hello world foo'|truncate(9) }}|{{ 'a\nb'|indent(2, true) }}|{{ [3, 1, 2]|sort|join(',') }}"),
            "hello...|  a\n  b|1,2,3");
  EXPECT_EQ(Render("{{ {'b': '<', 'a': 1}|tojson }}"), R"({"a": 1, "b": "\u003c"})");
  EXPECT_EQ(Render("{{ '%s=%.2f' % ('x', 1.5) }} {{ '{:>4}'.format(7) }}"), "x=1.50    7");
  EXPECT_EQ(Render("{{ 4 is even }} {{ 'a' is string }} {{ none is none }} {{ 3 is divisibleby 3 }}"),
            "True True True True");
}

TEST_F(TemplateTest, ParseErrorsNameTheLine) {
  Status st = ParseError("ok\n\n{{ x }");
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(st.message(), "line 3: unexpected '}' (expected end of print statement)");
  EXPECT_EQ(ParseError("{{ x|uppper }}").message(), "line 1: no filter named 'uppper'");
  EXPECT_EQ(ParseError("{{ x is nosuch }}").message(), "line 1: no test named 'nosuch'");
  EXPECT_EQ(ParseError("a\n{% endfor %}").message(), "line 2: unknown tag 'endfor'");
  EXPECT_FALSE(ParseError("{% if x %}never closed").ok());
  EXPECT_FALSE(ParseError("{{ 'unterminated }}").ok());
}

TEST_F(TemplateTest, ParseLocatedGivesTheErrorLineAsData) {
  auto parsed = Template::ParseLocated("ok\n\n{{ x|uppper }}\n");
  ASSERT_TRUE(std::holds_alternative<TemplateError>(parsed));
  const TemplateError& e = std::get<TemplateError>(parsed);
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.message, "no filter named 'uppper'");
  EXPECT_EQ(e.ToStatus().message(), "line 3: no filter named 'uppper'");
  // Lexer errors and the expression-depth limit are located too.
  auto lexed = Template::ParseLocated("a\nb\n{# never closed");
  ASSERT_TRUE(std::holds_alternative<TemplateError>(lexed));
  EXPECT_EQ(std::get<TemplateError>(lexed).line, 3);
  EXPECT_EQ(std::get<TemplateError>(lexed).message, "missing end of comment tag");
  std::string deep = "\n{{ 1";
  for (int i = 0; i < 400; ++i) deep += " + 1";
  deep += " }}";
  auto too_deep = Template::ParseLocated(deep);
  ASSERT_TRUE(std::holds_alternative<TemplateError>(too_deep));
  EXPECT_EQ(std::get<TemplateError>(too_deep).line, 2);
  // A message that itself reads "line N: ..." keeps its own line: nothing is parsed back out of the text.
  auto odd = Template::ParseLocated("\n{{ x|line_1 }}");
  ASSERT_TRUE(std::holds_alternative<TemplateError>(odd));
  EXPECT_EQ(std::get<TemplateError>(odd).line, 2);
  EXPECT_TRUE(std::holds_alternative<Template>(Template::ParseLocated("{{ x }}")));
}

TEST_F(TemplateTest, PlainVariable) {
  auto plain = [](std::string_view src) {
    auto t = Template::Parse(src);
    EXPECT_TRUE(t.ok());
    return t.ok() ? t->PlainVariable() : std::nullopt;
  };
  EXPECT_EQ(plain("{{ var }}"), "var");
  EXPECT_EQ(plain("{{var}}"), "var");
  EXPECT_EQ(plain("{{   var   }}\n"), "var");
  EXPECT_EQ(plain("{{ var }}\n\n"), std::nullopt);
  EXPECT_EQ(plain(" {{ var }}"), std::nullopt);
  EXPECT_EQ(plain("{{ var|upper }}"), std::nullopt);
  EXPECT_EQ(plain("{{ var.x }}"), std::nullopt);
  EXPECT_EQ(plain("{{ a }}{{ b }}"), std::nullopt);
  EXPECT_EQ(plain("{{ none }}"), std::nullopt);
  EXPECT_EQ(plain("text"), std::nullopt);
}

TEST_F(TemplateTest, UndeclaredVariables) {
  auto undeclared = [](std::string_view src) {
    auto t = Template::Parse(src);
    EXPECT_TRUE(t.ok());
    return t.ok() ? t->UndeclaredVariables() : std::vector<std::string>{};
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(undeclared("{{ b }} {{ a.x|default(c) }}"), (V{"a", "b", "c"}));
  EXPECT_EQ(undeclared("{% set x = y %}{{ x }}"), (V{"y"}));
  EXPECT_EQ(undeclared("{% for i in items %}{{ i }}{{ loop.index }}{{ z }}{% endfor %}"), (V{"items", "z"}));
  EXPECT_EQ(undeclared("{% macro m(p) %}{{ p }}{{ q }}{% endmacro %}{{ m(1) }}{{ range(3) }}"), (V{"q"}));
}

TEST_F(TemplateTest, PyStrOfValues) {
  EXPECT_EQ(PyStr(Value()), "None");
  EXPECT_EQ(PyStr(Value(true)), "True");
  EXPECT_EQ(PyStr(Value(int64_t{5})), "5");
  EXPECT_EQ(PyStr(Value(0.1)), "0.1");
  EXPECT_EQ(PyStr(Value("plain")), "plain");
  EXPECT_EQ(PyStr(Ctx(R"({"a": [1, "x", null, 2.0]})")), "{'a': [1, 'x', None, 2.0]}");
}

TEST_F(TemplateTest, NonObjectContextIsEmpty) {
  auto t = Template::Parse("[{{ x }}]");
  ASSERT_TRUE(t.ok());
  auto out = t->Render(Value(int64_t{3}));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "[]");
}

TEST_F(TemplateTest, ConcurrentRendersShareOneTemplate) {
  auto t = Template::Parse("{% for i in items %}{{ name|upper }}{{ i }}{% endfor %}");
  ASSERT_TRUE(t.ok());
  Template copy = *t;
  std::vector<std::thread> threads;
  std::vector<std::string> results(8);
  for (int k = 0; k < 8; ++k) {
    threads.emplace_back([&, k] {
      Value ctx = Ctx(R"({"items": [1, 2], "name": "n)" + std::to_string(k) + "\"}");
      for (int r = 0; r < 200; ++r) {
        auto out = copy.Render(ctx);
        if (out.ok()) results[k] = *out;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int k = 0; k < 8; ++k) EXPECT_EQ(results[k], "N" + std::to_string(k) + "1N" + std::to_string(k) + "2");
}

}  // namespace
}  // namespace mmirage::tmpl
