// Internal to the query module: the JMESPath AST built by the parser and walked by the interpreter.
//
// Nodes are owned by their parent through unique_ptr; the root is owned by a Program, which Expression shares.
// The tree is never mutated after parsing, so any number of threads may walk it at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/json.h"
#include "data/value.h"
#include "util/status.h"

namespace mmirage::query::internal {

struct FunctionSpec;

enum class NodeType : uint8_t {
  kCurrent,           // @ (also the implicit left/right side of projections)
  kField,             // name
  kSubexpression,     // children: [lhs, rhs]; rhs evaluated on the lhs result
  kPipe,              // children: [lhs, rhs]; like kSubexpression but stops projections
  kIndex,             // index (negative counts from the end)
  kSlice,             // slice[0..2] = start, stop, step
  kProjection,        // children: [lhs, rhs]; rhs over each element of the array lhs
  kValueProjection,   // children: [lhs, rhs]; rhs over each value of the object lhs
  kFilterProjection,  // children: [lhs, rhs, condition]
  kFlatten,           // children: [child]
  kLiteral,           // literal
  kMultiSelectList,   // children: items
  kMultiSelectHash,   // children: values, keys: their names
  kOr,                // children: [lhs, rhs]
  kAnd,               // children: [lhs, rhs]
  kNot,               // children: [child]
  kComparator,        // op, children: [lhs, rhs]
  kFunction,          // name, function, children: arguments
  kExpRef,            // children: [expression]
};

enum class Comparator : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };

struct Node {
  explicit Node(NodeType t, size_t offset_bytes) : type(t), offset(offset_bytes) {}
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node();  // iterative, so that a long chain (`a.b.c...`) never overflows the stack

  NodeType type;
  Comparator op = Comparator::kEq;
  size_t offset;                           // byte offset of the node's first token in the expression text
  int64_t index = 0;                       // kIndex
  std::optional<int64_t> slice[3];         // kSlice: start, stop, step
  std::string name;                        // kField: key; kFunction: function name
  Value literal;                           // kLiteral
  const FunctionSpec* function = nullptr;  // kFunction: resolved at compile time, never null there
  std::vector<std::string> keys;           // kMultiSelectHash: one per child
  std::vector<std::unique_ptr<Node>> children;
};

using NodePtr = std::unique_ptr<Node>;

struct Program {
  std::string text;
  NodePtr root;
  // Fast path: when the whole expression is a chain of field and index lookups (`a.b[0].c`), its steps in
  // order (kField / kIndex nodes of `root`); Evaluate then walks pointers without the interpreter.
  bool is_path = false;
  std::vector<const Node*> path;
  JsonPath json_path;  // the same steps, for readers that walk JSON text (Expression::FieldPath)
};

// 1-based column, in code points, of byte `offset` of `text`.
int ColumnOf(std::string_view text, size_t offset);

// "syntax error at column N: <detail> (in '<text>')", as Status::InvalidArgument.
Status SyntaxError(std::string_view text, size_t offset, std::string_view detail);

// The deepest AST Parse accepts (a deeper one is a syntax error "expression nested too deeply"), so that
// evaluating it can never overflow the stack.
constexpr int kMaxTreeDepth = 300;

// Parses `text` into an AST, resolving function names. Errors as documented in Expression::Compile.
Result<NodePtr> Parse(std::string_view text);

}  // namespace mmirage::query::internal
