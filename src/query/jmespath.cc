// Conformance: passes the whole official compliance suite (tests/unit/query/compliance_test.cc). String length,
// reverse and ordering work on Unicode code points. Where the specification leaves room, behaviour follows the
// reference implementation jmespath.py: to_string prints compact JSON with non-ASCII characters as \uXXXX
// escapes (Python's json.dumps), and `<`/`<=`/`>`/`>=` also order two strings (by code point).
// Evaluate walks the AST over a Value; only type/value errors that depend on the data (`abs('x')`, a slice step
// of 0 applied to an array) are reported at evaluation time. Intermediate results borrow from the input.

#include "query/jmespath.h"

#include <array>
#include <exception>
#include <utility>
#include <vector>

#include "query/internal/jmespath_ast.h"
#include "query/internal/jmespath_interpreter.h"

namespace mmirage::query {
namespace {

// Message prefixes of the statuses this module creates, one per kind (see internal/jmespath_parser.cc and the
// "invalid-type: " / "invalid-value: " messages of the interpreter and functions).
constexpr std::array<std::pair<std::string_view, ErrorKind>, 5> kPrefixes = {{
    {"syntax error at column ", ErrorKind::kSyntax},
    {"unknown function '", ErrorKind::kUnknownFunction},
    {"function '", ErrorKind::kInvalidArity},
    {"invalid-type: ", ErrorKind::kInvalidType},
    {"invalid-value: ", ErrorKind::kInvalidValue},
}};

// Position in `msg` where this module's message starts, with its kind: at 0, or after a "context: " prefix
// added by Status::WithContext. npos when none matches.
std::pair<size_t, ErrorKind> FindOwnMessage(std::string_view msg) {
  size_t pos = 0;
  while (true) {
    for (const auto& [prefix, kind] : kPrefixes) {
      if (msg.substr(pos, prefix.size()) == prefix) return {pos, kind};
    }
    pos = msg.find(": ", pos);
    if (pos == std::string_view::npos) return {pos, ErrorKind::kInvalidValue};
    pos += 2;
  }
}

// Appends the lookups of `n` to `steps` when `n` is a chain of field/index lookups; false otherwise.
bool CollectPath(const internal::Node& n, std::vector<const internal::Node*>* steps) {
  switch (n.type) {
    case internal::NodeType::kCurrent: return true;
    case internal::NodeType::kField:
    case internal::NodeType::kIndex: steps->push_back(&n); return true;
    case internal::NodeType::kSubexpression:
      return CollectPath(*n.children[0], steps) && CollectPath(*n.children[1], steps);
    default: return false;
  }
}

// Follows a path of lookups from `data`; nullptr when a step is missing (the JMESPath result is then null).
const Value* WalkPath(const std::vector<const internal::Node*>& path, const Value& data) {
  const Value* current = &data;
  for (const internal::Node* step : path) {
    if (step->type == internal::NodeType::kField) {
      current = current->Find(step->name);
      if (current == nullptr) return nullptr;
      continue;
    }
    if (!current->is_array()) return nullptr;
    const int64_t size = static_cast<int64_t>(current->as_array().size());
    const int64_t i = step->index < 0 ? step->index + size : step->index;
    if (i < 0 || i >= size) return nullptr;
    current = &current->as_array()[static_cast<size_t>(i)];
  }
  return current;
}

}  // namespace

Result<Expression> Expression::Compile(std::string_view text) {
  MMIRAGE_ASSIGN_OR_RETURN(internal::NodePtr root, internal::Parse(text));
  auto program = std::make_shared<internal::Program>();
  program->text = std::string(text);
  program->root = std::move(root);
  program->is_path = CollectPath(*program->root, &program->path);
  if (program->is_path) {
    for (const internal::Node* step : program->path) {
      JsonPathStep js;
      js.is_index = step->type == internal::NodeType::kIndex;
      if (js.is_index) js.index = step->index;
      else js.key = step->name;
      program->json_path.push_back(std::move(js));
    }
  }
  return Expression(std::move(program));
}

const JsonPath* Expression::FieldPath() const {
  return program_ != nullptr && program_->is_path ? &program_->json_path : nullptr;
}

Result<Value> Expression::Evaluate(const Value& data) const {
  if (program_ == nullptr) return Value();
  if (program_->is_path) {
    const Value* found = WalkPath(program_->path, data);
    return found != nullptr ? *found : Value();
  }
  // Last line of defence: the interpreter reports data errors as values; an allocation failure (std::bad_alloc,
  // std::length_error) on hostile data must still fail the row, never the process.
  try {
    MMIRAGE_ASSIGN_OR_RETURN(internal::Ref result, internal::EvalNode(*program_->root, data));
    return std::move(result).Take();
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("invalid-value: evaluation failed: ") + e.what());
  }
}

const std::string& Expression::text() const {
  static const std::string empty;
  return program_ == nullptr ? empty : program_->text;
}

ErrorKind ErrorKindOf(const Status& s) { return FindOwnMessage(s.message()).second; }

int ErrorColumnOf(const Status& s) {
  if (s.ok()) return 0;
  const std::string_view msg = s.message();
  auto [pos, kind] = FindOwnMessage(msg);
  if (pos == std::string_view::npos || kind == ErrorKind::kInvalidType || kind == ErrorKind::kInvalidValue) {
    return 0;
  }
  // Function names are plain identifiers, so the first " at column " after the prefix is ours.
  constexpr std::string_view kAt = "at column ";
  size_t at = msg.find(kAt, pos);
  if (at == std::string_view::npos) return 0;
  int column = 0;
  for (size_t i = at + kAt.size(); i < msg.size() && msg[i] >= '0' && msg[i] <= '9'; ++i) {
    column = column * 10 + (msg[i] - '0');
  }
  return column;
}

}  // namespace mmirage::query
