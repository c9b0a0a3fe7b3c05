#include "query/jmespath.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "data/json.h"

namespace mmirage::query {
namespace {

Value Json(std::string_view text) {
  auto v = ParseJson(text);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : Value();
}

// Compiles and evaluates; the result as compact JSON, or "ERROR: <message>".
std::string Eval(std::string_view expression, std::string_view data) {
  auto e = Expression::Compile(expression);
  if (!e.ok()) return "ERROR: " + e.status().message();
  auto r = e->Evaluate(Json(data));
  if (!r.ok()) return "ERROR: " + r.status().message();
  return ToJson(*r);
}

class JmespathTest : public ::testing::Test {};

TEST_F(JmespathTest, SyntaxErrorReportsColumnAndText) {
  auto e = Expression::Compile("foo[1");
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(e.status().IsInvalidArgument());
  EXPECT_EQ(ErrorKindOf(e.status()), ErrorKind::kSyntax);
  EXPECT_EQ(ErrorColumnOf(e.status()), 6);
  EXPECT_EQ(e.status().message(), "syntax error at column 6: expected ']', got end of expression (in 'foo[1')");
}

TEST_F(JmespathTest, SyntaxErrorColumnPointsAtOffendingToken) {
  auto e = Expression::Compile("a.b || ^c");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(ErrorColumnOf(e.status()), 8);
  auto f = Expression::Compile("foo.]");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(ErrorColumnOf(f.status()), 5);
}

TEST_F(JmespathTest, ColumnCountsCodePoints) {
  auto e = Expression::Compile("'\xc3\xa9\xc3\xa9' == ]");  // 'éé' == ]
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(ErrorColumnOf(e.status()), 9);
}

TEST_F(JmespathTest, MessagesStayOnOneLine) {
  auto e = Expression::Compile("foo\n  .]");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message().find('\n'), std::string::npos);
}

TEST_F(JmespathTest, UnknownFunctionIsACompileError) {
  auto e = Expression::Compile("lenght(@)");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(ErrorKindOf(e.status()), ErrorKind::kUnknownFunction);
  EXPECT_EQ(ErrorColumnOf(e.status()), 1);
  EXPECT_EQ(e.status().message(), "unknown function 'lenght()' at column 1");
}

TEST_F(JmespathTest, WrongArityIsACompileError) {
  auto e = Expression::Compile("length(a, b)");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(ErrorKindOf(e.status()), ErrorKind::kInvalidArity);
  EXPECT_EQ(e.status().message(), "function 'length()' takes 1 argument, got 2 at column 1");

  auto nested = Expression::Compile("foo | [merge()]");
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(ErrorKindOf(nested.status()), ErrorKind::kInvalidArity);
  EXPECT_EQ(ErrorColumnOf(nested.status()), 8);
  EXPECT_EQ(nested.status().message(), "function 'merge()' takes at least 1 argument, got 0 at column 8");
}

TEST_F(JmespathTest, SyntaxErrorWinsOverFunctionError) {
  auto e = Expression::Compile("nope(a) ||");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(ErrorKindOf(e.status()), ErrorKind::kSyntax);
}

TEST_F(JmespathTest, TypeErrorsAreRuntimeErrors) {
  auto e = Expression::Compile("abs(name)");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  auto ok = e->Evaluate(Json(R"({"name":-3})"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, Value(3));
  auto bad = e->Evaluate(Json(R"({"name":"x"})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsInvalidArgument());
  EXPECT_EQ(ErrorKindOf(bad.status()), ErrorKind::kInvalidType);
  EXPECT_EQ(ErrorColumnOf(bad.status()), 0);
  EXPECT_EQ(bad.status().message(), "invalid-type: function 'abs()' expected number, got string");
}

TEST_F(JmespathTest, ExpressionWhereValueExpectedIsATypeError) {
  EXPECT_EQ(Eval("length(&a)", "{}"),
            "ERROR: invalid-type: function 'length()' expected string or array or "
            "object, got expression");
  EXPECT_EQ(Eval("sort_by(@, a)", "[]"),
            "ERROR: invalid-type: function 'sort_by()' expected expression as argument 2, got null");
  EXPECT_EQ(Eval("sort_by(@, &a)", R"([{"a":1},{"a":"x"}])"),
            "ERROR: invalid-type: function 'sort_by()' expected the expression to return number, got string");
}

TEST_F(JmespathTest, ZeroSliceStepIsARuntimeInvalidValue) {
  auto e = Expression::Compile("a[::0]");
  ASSERT_TRUE(e.ok());
  auto not_array = e->Evaluate(Json(R"({"a":1})"));
  ASSERT_TRUE(not_array.ok());
  EXPECT_TRUE(not_array->is_null());
  auto r = e->Evaluate(Json(R"({"a":[1]})"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ErrorKindOf(r.status()), ErrorKind::kInvalidValue);
}

TEST_F(JmespathTest, ErrorKindSurvivesContext) {
  auto e = Expression::Compile("foo[");
  ASSERT_FALSE(e.ok());
  Status s = e.status().WithContext("cfg.yaml:3:7: stage 'x'");
  EXPECT_EQ(ErrorKindOf(s), ErrorKind::kSyntax);
  EXPECT_EQ(ErrorColumnOf(s), 5);
  auto f = Expression::Compile("nope()");
  Status t = f.status().WithContext("cfg.yaml:3:7");
  EXPECT_EQ(ErrorKindOf(t), ErrorKind::kUnknownFunction);
  EXPECT_EQ(ErrorColumnOf(t), 1);
}

TEST_F(JmespathTest, EmptyExpressionEvaluatesToNull) {
  Expression e;
  EXPECT_EQ(e.text(), "");
  auto r = e.Evaluate(Json("{\"a\":1}"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->is_null());
}

TEST_F(JmespathTest, TextIsKept) {
  auto e = Expression::Compile("a.b");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->text(), "a.b");
  Expression copy = *e;
  EXPECT_EQ(copy.text(), "a.b");
}

TEST_F(JmespathTest, FieldAndIndexLookups) {
  const char* data = R"({"a":{"b":{"c":"deep"}},"list":[10,20,30]})";
  EXPECT_EQ(Eval("a.b.c", data), "\"deep\"");
  EXPECT_EQ(Eval("list[0]", data), "10");
  EXPECT_EQ(Eval("list[-1]", data), "30");
  EXPECT_EQ(Eval("list[3]", data), "null");
  EXPECT_EQ(Eval("a.x.c", data), "null");
}

TEST_F(JmespathTest, ResultsOfTemporariesAreCopiedOut) {
  // The right-hand side borrows from a value computed on the way; the result must outlive it.
  EXPECT_EQ(Eval("a[*].b | [0]", R"({"a":[{"b":"long string value, not SSO"},{"b":"y"}]})"),
            "\"long string value, not SSO\"");
  EXPECT_EQ(Eval("`{\"a\":{\"b\":\"literal\"}}`.a.b", "{}"), "\"literal\"");
  EXPECT_EQ(Eval("sort_by(@, &k)[0].name", R"([{"k":2,"name":"two"},{"k":1,"name":"one"}])"), "\"one\"");
  EXPECT_EQ(Eval("{x: a}.x.y", R"({"a":{"y":"inner value that is long enough"}})"),
            "\"inner value that is long enough\"");
  EXPECT_EQ(Eval("(a || b).c", R"({"b":{"c":[1,2]}})"), "[1,2]");
}

TEST_F(JmespathTest, StringsAreCodePointAware) {
  EXPECT_EQ(Eval("length(s)", R"({"s":"h\u00e9llo\u2713"})"), "6");
  EXPECT_EQ(Eval("reverse(s)", R"({"s":"a\u00e9\ud834\udd1e"})"),
            "\"\xf0\x9d\x84\x9e\xc3\xa9"
            "a\"");
  EXPECT_EQ(Eval("sort(@)", R"(["\u00e9","z","a","\ud834\udd1e"])"), "[\"a\",\"z\",\"\xc3\xa9\",\"\xf0\x9d\x84\x9e\"]");
}

TEST_F(JmespathTest, NumbersKeepIntOrDouble) {
  EXPECT_EQ(Eval("to_string(floor(`1.5`))", "{}"), "\"1\"");
  EXPECT_EQ(Eval("to_string(`1.5`)", "{}"), "\"1.5\"");
  EXPECT_EQ(Eval("sum(@)", "[1,2,3]"), "6");
  EXPECT_EQ(Eval("sum(@)", "[1,2.5]"), "3.5");
  EXPECT_EQ(Eval("avg(@)", "[1,2]"), "1.5");
  EXPECT_EQ(Eval("to_number('12')", "{}"), "12");
  EXPECT_EQ(Eval("to_number('1e3')", "{}"), "1000.0");
  EXPECT_EQ(Eval("to_number('12abc')", "{}"), "null");
}

TEST_F(JmespathTest, ToStringEscapesNonAsciiLikeJmespathPy) {
  EXPECT_EQ(Eval("to_string(@)", R"(["\u00e9", "\ud834\udd1e", "a\"b\n", "\u007f"])"),
            R"("[\"\\u00e9\",\"\\ud834\\udd1e\",\"a\\\"b\\n\",\"\\u007f\"]")");
  EXPECT_EQ(Eval("to_string(s)", R"({"s":"\u00e9 stays"})"), "\"\xc3\xa9 stays\"");  // strings pass through
}

TEST_F(JmespathTest, FiltersAndComparisons) {
  const char* data = R"({"people":[{"name":"a","age":30},{"name":"b","age":20},{"name":"c"}]})";
  EXPECT_EQ(Eval("people[?age > `25`].name", data), "[\"a\"]");
  EXPECT_EQ(Eval("people[?age].name | join(',', @)", data), "\"a,b\"");
  EXPECT_EQ(Eval("people[?name == 'b'] | [0].age", data), "20");
  EXPECT_EQ(Eval("people[0].name < 'z'", data), "true");  // strings order by code point, as jmespath.py does
  EXPECT_EQ(Eval("people[?name >= 'b'].name", data), "[\"b\",\"c\"]");
  EXPECT_EQ(Eval("people[0].name < `1`", data), "null");  // mixed types do not order
  EXPECT_EQ(Eval("max_by(people[?age], &age).name", data), "\"a\"");
  EXPECT_EQ(Eval("map(&age, people)", data), "[30,20,null]");
}

TEST_F(JmespathTest, ConcurrentEvaluationSharesTheAst) {
  auto e = Expression::Compile("items[?v > `1`].v | sum(@)");
  ASSERT_TRUE(e.ok());
  const Value data = Json(R"({"items":[{"v":1},{"v":2},{"v":3}]})");
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Expression copy = *e;
      for (int i = 0; i < 1000; ++i) {
        auto r = copy.Evaluate(data);
        if (r.ok() && *r == Value(5)) ++ok[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int n : ok) EXPECT_EQ(n, 1000);
}

TEST_F(JmespathTest, DeepNestingIsASyntaxErrorNotACrash) {
  std::string deep(100000, '(');
  auto e = Expression::Compile(deep);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(ErrorKindOf(e.status()), ErrorKind::kSyntax);
}

}  // namespace
}  // namespace mmirage::query
