// Template: a Jinja2 template engine with Python Jinja2's default `jinja2.Environment()` semantics.
//
// Supported: the full expression language (arithmetic with Python semantics, comparisons, `in`, `and`/`or`,
// `~`, conditional expressions, literals, slicing, attribute/item access with Jinja's fallback, filters, tests,
// string/dict/list methods), statements (if/for/set/macro/filter/with/raw), comments, whitespace control, and
// the common built-in filters and tests. Defaults as in Jinja2: autoescape off, no trim_blocks/lstrip_blocks,
// lenient `Undefined` (printing an undefined name gives ""; an attribute of an undefined is an error), and a
// single trailing newline of the source is removed. Values print as Python's str() does (see PyStr).
// Deliberate differences from Python are listed in tests/template_diff/KNOWN_DIFFERENCES.md (chief among them:
// integers are 64-bit; an overflowing int operation is a render error "integer overflow").
//
// Thread-safety and ownership: a Template is immutable after Parse; copies share the parsed tree (cheap to
// copy); Render may be called concurrently from many threads.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "data/value.h"
#include "util/status.h"

namespace mmirage::tmpl {

namespace internal {
struct Program;
}  // namespace internal

// An error in a template's source, located: `line` is 1-based (the lexer tracks lines, not columns).
struct TemplateError {
  int line = 1;
  std::string message;  // what is wrong, without the line: "no filter named 'uppper'"
  // Status::InvalidArgument "line <line>: <message>".
  Status ToStatus() const;
};

class Template {
 public:
  // Parses `source`. Unknown filters and tests are parse-time errors, as in Jinja2.
  // Errors: Status::InvalidArgument with one line naming the 1-based line of the source, e.g.
  // "line 3: unexpected '}' (expected end of print statement)", "line 1: no filter named 'uppper'"
  // (TemplateError::ToStatus of the error ParseLocated gives).
  static Result<Template> Parse(std::string_view source);
  // Parse, with the first error of the source as data (for callers that place it in a larger file).
  static std::variant<Template, TemplateError> ParseLocated(std::string_view source);

  // Renders with `vars` (an object: name -> value; missing names are undefined; a non-object is treated as
  // an empty context). Errors: Status::InvalidArgument "line 2: 'dict object' has no attribute 'x'"-style.
  Result<std::string> Render(const Value& vars) const;
  // The same, appending the text to *out (a caller's reused buffer saves an allocation per render); the size
  // limit applies to the whole of *out. On error *out holds what was rendered before it.
  Status RenderTo(const Value& vars, std::string* out) const;

  // Names the template reads from its context without setting them itself
  // (jinja2.meta.find_undeclared_variables), sorted, without Jinja's globals (range, dict, namespace...).
  std::vector<std::string> UndeclaredVariables() const;

  // The name when the body is exactly one `{{ name }}` (whitespace inside the braces allowed, a single
  // trailing newline tolerated, nothing else); nullopt otherwise.
  std::optional<std::string> PlainVariable() const;

 private:
  explicit Template(std::shared_ptr<const internal::Program> program) : program_(std::move(program)) {}
  std::shared_ptr<const internal::Program> program_;
};

// Python str() of a value, as printing does: None, True/False, ints, floats via FormatDouble, strings as is,
// lists "[1, 'a']" and dicts "{'a': 1}" with Python repr() quoting of the strings inside.
std::string PyStr(const Value& v);

}  // namespace mmirage::tmpl
