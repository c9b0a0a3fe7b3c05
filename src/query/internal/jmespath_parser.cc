// Top-down operator precedence (Pratt) parser for JMESPath, following the grammar and binding powers of the
// specification and its reference implementation.

#include <string>

#include "data/utf8.h"
#include "query/internal/jmespath_ast.h"
#include "query/internal/jmespath_functions.h"
#include "query/internal/jmespath_lexer.h"

namespace mmirage::query::internal {
namespace {

constexpr int kProjectionStop = 10;  // tokens binding weaker than this end a projection's right-hand side
constexpr int kMaxDepth = 256;       // nesting limit, so that hostile input cannot overflow the stack

int BindingPower(Tok t) {
  switch (t) {
    case Tok::kPipe: return 1;
    case Tok::kOr: return 2;
    case Tok::kAnd: return 3;
    case Tok::kEq:
    case Tok::kNe:
    case Tok::kLt:
    case Tok::kLe:
    case Tok::kGt:
    case Tok::kGe: return 5;
    case Tok::kFlatten: return 9;
    case Tok::kStar: return 20;
    case Tok::kFilter: return 21;
    case Tok::kDot: return 40;
    case Tok::kNot: return 45;
    case Tok::kLBrace: return 50;
    case Tok::kLBracket: return 55;
    case Tok::kLParen: return 60;
    default: return 0;
  }
}

NodePtr MakeNode(NodeType type, size_t offset) { return std::make_unique<Node>(type, offset); }

NodePtr MakeBinary(NodeType type, NodePtr lhs, NodePtr rhs) {
  NodePtr n = MakeNode(type, lhs->offset);
  n->children.push_back(std::move(lhs));
  n->children.push_back(std::move(rhs));
  return n;
}

class Parser {
 public:
  Parser(std::string_view text, std::vector<Token> tokens) : text_(text), tokens_(std::move(tokens)) {}

  Result<NodePtr> Run() {
    MMIRAGE_ASSIGN_OR_RETURN(NodePtr root, Expression(0));
    if (Cur().type != Tok::kEof) return Unexpected(Cur());
    if (!function_error_.ok()) return function_error_;
    return root;
  }

 private:
  const Token& Cur() const { return tokens_[pos_]; }
  const Token& Peek(size_t k) const { return tokens_[std::min(pos_ + k, tokens_.size() - 1)]; }
  void Advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }

  // Appends "end of expression" or the token's text in quotes. (Appending, not operator+, avoids a GCC 12
  // -Wrestrict false positive.)
  void AppendDescription(const Token& t, std::string* out) const {
    if (t.type == Tok::kEof) {
      out->append("end of expression");
      return;
    }
    out->push_back('\'');
    out->append(text_.substr(t.begin, t.end - t.begin));
    out->push_back('\'');
  }
  Status Unexpected(const Token& t) const {
    std::string detail = "unexpected ";
    AppendDescription(t, &detail);
    return SyntaxError(text_, t.begin, detail);
  }
  Status Expected(std::string_view what) const {
    std::string detail = "expected ";
    detail.append(what);
    detail.append(", got ");
    AppendDescription(Cur(), &detail);
    return SyntaxError(text_, Cur().begin, detail);
  }
  Status Match(Tok type, std::string_view what) {
    if (Cur().type != type) return Expected(what);
    Advance();
    return Status::OK();
  }

  Result<NodePtr> Expression(int binding_power);
  Result<NodePtr> Nud(const Token& t);
  Result<NodePtr> Led(const Token& t, NodePtr left);
  Result<NodePtr> ProjectionRhs(int binding_power);
  Result<NodePtr> DotRhs(int binding_power);
  Result<NodePtr> IndexOrSlice(NodePtr left);
  Result<NodePtr> Filter(NodePtr left);
  Result<NodePtr> MultiSelectList(size_t offset);
  Result<NodePtr> MultiSelectHash(size_t offset);
  Result<NodePtr> FunctionCall(NodePtr name, const Token& lparen);

  std::string_view text_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  Status function_error_;  // first unknown-function / arity error; reported only if the syntax is valid
};

Result<NodePtr> Parser::Expression(int binding_power) {
  if (++depth_ > kMaxDepth) return SyntaxError(text_, Cur().begin, "expression nested too deeply");
  const Token token = Cur();
  Advance();
  MMIRAGE_ASSIGN_OR_RETURN(NodePtr left, Nud(token));
  while (binding_power < BindingPower(Cur().type)) {
    const Token op = Cur();
    Advance();
    MMIRAGE_ASSIGN_OR_RETURN(left, Led(op, std::move(left)));
  }
  --depth_;
  return left;
}

Result<NodePtr> Parser::Nud(const Token& t) {
  switch (t.type) {
    case Tok::kLiteral: {
      NodePtr n = MakeNode(NodeType::kLiteral, t.begin);
      n->literal = t.value;
      return n;
    }
    case Tok::kUnquotedIdentifier:
    case Tok::kQuotedIdentifier: {
      if (t.type == Tok::kQuotedIdentifier && Cur().type == Tok::kLParen) {
        return SyntaxError(text_, t.begin, "a quoted identifier cannot name a function");
      }
      NodePtr n = MakeNode(NodeType::kField, t.begin);
      n->name = t.value.as_string();
      return n;
    }
    case Tok::kStar: {
      NodePtr right;
      if (Cur().type == Tok::kRBracket) {
        right = MakeNode(NodeType::kCurrent, t.begin);
      } else {
        MMIRAGE_ASSIGN_OR_RETURN(right, ProjectionRhs(BindingPower(Tok::kStar)));
      }
      return MakeBinary(NodeType::kValueProjection, MakeNode(NodeType::kCurrent, t.begin), std::move(right));
    }
    case Tok::kFilter: return Filter(MakeNode(NodeType::kCurrent, t.begin));
    case Tok::kLBrace: return MultiSelectHash(t.begin);
    case Tok::kLParen: {
      MMIRAGE_ASSIGN_OR_RETURN(NodePtr inner, Expression(0));
      MMIRAGE_TRY(Match(Tok::kRParen, "')'"));
      return inner;
    }
    case Tok::kFlatten: {
      NodePtr flatten = MakeNode(NodeType::kFlatten, t.begin);
      flatten->children.push_back(MakeNode(NodeType::kCurrent, t.begin));
      MMIRAGE_ASSIGN_OR_RETURN(NodePtr right, ProjectionRhs(BindingPower(Tok::kFlatten)));
      return MakeBinary(NodeType::kProjection, std::move(flatten), std::move(right));
    }
    case Tok::kNot: {
      MMIRAGE_ASSIGN_OR_RETURN(NodePtr operand, Expression(BindingPower(Tok::kNot)));
      NodePtr n = MakeNode(NodeType::kNot, t.begin);
      n->children.push_back(std::move(operand));
      return n;
    }
    case Tok::kLBracket:
      if (Cur().type == Tok::kNumber || Cur().type == Tok::kColon) {
        return IndexOrSlice(MakeNode(NodeType::kCurrent, t.begin));
      }
      if (Cur().type == Tok::kStar && Peek(1).type == Tok::kRBracket) {
        Advance();
        Advance();
        MMIRAGE_ASSIGN_OR_RETURN(NodePtr right, ProjectionRhs(BindingPower(Tok::kStar)));
        return MakeBinary(NodeType::kProjection, MakeNode(NodeType::kCurrent, t.begin), std::move(right));
      }
      return MultiSelectList(t.begin);
    case Tok::kCurrent: return MakeNode(NodeType::kCurrent, t.begin);
    case Tok::kExpRef: {
      MMIRAGE_ASSIGN_OR_RETURN(NodePtr operand, Expression(0));
      NodePtr n = MakeNode(NodeType::kExpRef, t.begin);
      n->children.push_back(std::move(operand));
      return n;
    }
    default: return Unexpected(t);
  }
}

Result<NodePtr> Parser::Led(const Token& t, NodePtr left) {
  switch (t.type) {
    case Tok::kDot: {
      if (Cur().type == Tok::kStar) {
        Advance();
        MMIRAGE_ASSIGN_OR_RETURN(NodePtr right, ProjectionRhs(BindingPower(Tok::kDot)));
        return MakeBinary(NodeType::kValueProjection, std::move(left), std::move(right));
      }
      MMIRAGE_ASSIGN_OR_RETURN(NodePtr right, DotRhs(BindingPower(Tok::kDot)));
      return MakeBinary(NodeType::kSubexpression, std::move(left), std::move(right));
    }
    case Tok::kPipe:
    case Tok::kOr:
    case Tok::kAnd: {
      MMIRAGE_ASSIGN_OR_RETURN(NodePtr right, Expression(BindingPower(t.type)));
      const NodeType type = t.type == Tok::kPipe ? NodeType::kPipe
                            : t.type == Tok::kOr ? NodeType::kOr
                                                 : NodeType::kAnd;
      return MakeBinary(type, std::move(left), std::move(right));
    }
    case Tok::kEq:
    case Tok::kNe:
    case Tok::kLt:
    case Tok::kLe:
    case Tok::kGt:
    case Tok::kGe: {
      MMIRAGE_ASSIGN_OR_RETURN(NodePtr right, Expression(BindingPower(t.type)));
      NodePtr n = MakeBinary(NodeType::kComparator, std::move(left), std::move(right));
      n->op = t.type == Tok::kEq   ? Comparator::kEq
              : t.type == Tok::kNe ? Comparator::kNe
              : t.type == Tok::kLt ? Comparator::kLt
              : t.type == Tok::kLe ? Comparator::kLe
              : t.type == Tok::kGt ? Comparator::kGt
                                   : Comparator::kGe;
      return n;
    }
    case Tok::kLParen: return FunctionCall(std::move(left), t);
    case Tok::kFilter: return Filter(std::move(left));
    case Tok::kFlatten: {
      NodePtr flatten = MakeNode(NodeType::kFlatten, left->offset);
      flatten->children.push_back(std::move(left));
      MMIRAGE_ASSIGN_OR_RETURN(NodePtr right, ProjectionRhs(BindingPower(Tok::kFlatten)));
      return MakeBinary(NodeType::kProjection, std::move(flatten), std::move(right));
    }
    case Tok::kLBracket: {
      if (Cur().type == Tok::kNumber || Cur().type == Tok::kColon) return IndexOrSlice(std::move(left));
      MMIRAGE_TRY(Match(Tok::kStar, "'*', a number or ':'"));
      MMIRAGE_TRY(Match(Tok::kRBracket, "']'"));
      MMIRAGE_ASSIGN_OR_RETURN(NodePtr right, ProjectionRhs(BindingPower(Tok::kStar)));
      return MakeBinary(NodeType::kProjection, std::move(left), std::move(right));
    }
    default: return Unexpected(t);
  }
}

Result<NodePtr> Parser::ProjectionRhs(int binding_power) {
  const Tok t = Cur().type;
  if (BindingPower(t) < kProjectionStop) return MakeNode(NodeType::kCurrent, Cur().begin);
  if (t == Tok::kLBracket || t == Tok::kFilter) return Expression(binding_power);
  if (t == Tok::kDot) {
    Advance();
    return DotRhs(binding_power);
  }
  return Unexpected(Cur());
}

Result<NodePtr> Parser::DotRhs(int binding_power) {
  const Token t = Cur();
  switch (t.type) {
    case Tok::kUnquotedIdentifier:
    case Tok::kQuotedIdentifier:
    case Tok::kStar: return Expression(binding_power);
    case Tok::kLBracket: Advance(); return MultiSelectList(t.begin);
    case Tok::kLBrace: Advance(); return MultiSelectHash(t.begin);
    default: return Expected("an identifier, '*', '[' or '{' after '.'");
  }
}

// After '[' when the current token is a number or ':'. Builds left[index], or a projection over left[slice].
Result<NodePtr> Parser::IndexOrSlice(NodePtr left) {
  NodePtr access;
  if (Cur().type == Tok::kColon || Peek(1).type == Tok::kColon) {
    access = MakeNode(NodeType::kSlice, Cur().begin);
    int part = 0;
    while (Cur().type != Tok::kRBracket) {
      if (Cur().type == Tok::kColon) {
        if (++part == 3) return Expected("']'");
        Advance();
      } else if (Cur().type == Tok::kNumber && !access->slice[part].has_value()) {
        access->slice[part] = Cur().number;
        Advance();
      } else {
        return Expected(access->slice[part].has_value() ? "':' or ']'" : "a number, ':' or ']'");
      }
    }
    Advance();
  } else {
    access = MakeNode(NodeType::kIndex, Cur().begin);
    access->index = Cur().number;
    Advance();
    MMIRAGE_TRY(Match(Tok::kRBracket, "']'"));
  }
  const bool is_slice = access->type == NodeType::kSlice;
  NodePtr indexed = left->type == NodeType::kCurrent
                        ? std::move(access)
                        : MakeBinary(NodeType::kSubexpression, std::move(left), std::move(access));
  if (!is_slice) return indexed;
  MMIRAGE_ASSIGN_OR_RETURN(NodePtr right, ProjectionRhs(BindingPower(Tok::kStar)));
  return MakeBinary(NodeType::kProjection, std::move(indexed), std::move(right));
}

// After '[?'.
Result<NodePtr> Parser::Filter(NodePtr left) {
  MMIRAGE_ASSIGN_OR_RETURN(NodePtr condition, Expression(0));
  MMIRAGE_TRY(Match(Tok::kRBracket, "']'"));
  NodePtr right;
  if (Cur().type == Tok::kFlatten) {
    right = MakeNode(NodeType::kCurrent, Cur().begin);
  } else {
    MMIRAGE_ASSIGN_OR_RETURN(right, ProjectionRhs(BindingPower(Tok::kFilter)));
  }
  NodePtr n = MakeBinary(NodeType::kFilterProjection, std::move(left), std::move(right));
  n->children.push_back(std::move(condition));
  return n;
}

// After '['.
Result<NodePtr> Parser::MultiSelectList(size_t offset) {
  NodePtr n = MakeNode(NodeType::kMultiSelectList, offset);
  while (true) {
    MMIRAGE_ASSIGN_OR_RETURN(NodePtr item, Expression(0));
    n->children.push_back(std::move(item));
    if (Cur().type == Tok::kRBracket) break;
    MMIRAGE_TRY(Match(Tok::kComma, "',' or ']'"));
  }
  Advance();
  return n;
}

// After '{'.
Result<NodePtr> Parser::MultiSelectHash(size_t offset) {
  NodePtr n = MakeNode(NodeType::kMultiSelectHash, offset);
  while (true) {
    if (Cur().type != Tok::kUnquotedIdentifier && Cur().type != Tok::kQuotedIdentifier) {
      return Expected("an identifier");
    }
    n->keys.push_back(Cur().value.as_string());
    Advance();
    MMIRAGE_TRY(Match(Tok::kColon, "':'"));
    MMIRAGE_ASSIGN_OR_RETURN(NodePtr value, Expression(0));
    n->children.push_back(std::move(value));
    if (Cur().type == Tok::kRBrace) break;
    MMIRAGE_TRY(Match(Tok::kComma, "',' or '}'"));
  }
  Advance();
  return n;
}

// After '(' following `name`.
Result<NodePtr> Parser::FunctionCall(NodePtr name, const Token& lparen) {
  if (name->type != NodeType::kField) return SyntaxError(text_, lparen.begin, "'(' must follow a function name");
  NodePtr n = MakeNode(NodeType::kFunction, name->offset);
  n->name = std::move(name->name);
  if (Cur().type == Tok::kRParen) {
    Advance();
  } else {
    while (true) {
      MMIRAGE_ASSIGN_OR_RETURN(NodePtr arg, Expression(0));
      n->children.push_back(std::move(arg));
      if (Cur().type == Tok::kRParen) break;
      MMIRAGE_TRY(Match(Tok::kComma, "',' or ')'"));
    }
    Advance();
  }
  n->function = FindFunction(n->name);
  if (function_error_.ok()) {
    const int column = ColumnOf(text_, n->offset);
    if (n->function == nullptr) {
      function_error_ =
          Status::InvalidArgument("unknown function '" + n->name + "()' at column " + std::to_string(column));
    } else {
      Status arity = CheckArity(*n->function, n->children.size());
      if (!arity.ok()) {
        function_error_ = Status::InvalidArgument(arity.message() + " at column " + std::to_string(column));
      }
    }
  }
  return n;
}

}  // namespace

int ColumnOf(std::string_view text, size_t offset) {
  return 1 + static_cast<int>(CountCodePoints(text.substr(0, std::min(offset, text.size()))));
}

Status SyntaxError(std::string_view text, size_t offset, std::string_view detail) {
  std::string msg = "syntax error at column " + std::to_string(ColumnOf(text, offset)) + ": ";
  msg.append(detail);
  msg += " (in '";
  for (char c : text) msg += (c == '\n' || c == '\r') ? ' ' : c;  // keep the message on one line
  msg += "')";
  return Status::InvalidArgument(std::move(msg));
}

Node::~Node() {
  std::vector<NodePtr> pending;
  for (auto& c : children) {
    if (c) pending.push_back(std::move(c));
  }
  while (!pending.empty()) {
    NodePtr n = std::move(pending.back());
    pending.pop_back();
    for (auto& c : n->children) {
      if (c) pending.push_back(std::move(c));
    }
  }
}

namespace {
// The offset of a node deeper than kMaxTreeDepth, or nullopt (iterative walk).
std::optional<size_t> TooDeepAt(const Node& root) {
  std::vector<std::pair<const Node*, int>> stack = {{&root, 1}};
  while (!stack.empty()) {
    auto [n, d] = stack.back();
    stack.pop_back();
    if (d > kMaxTreeDepth) return n->offset;
    for (const auto& c : n->children) {
      if (c) stack.emplace_back(c.get(), d + 1);
    }
  }
  return std::nullopt;
}
}  // namespace

Result<NodePtr> Parse(std::string_view text) {
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(text));
  MMIRAGE_ASSIGN_OR_RETURN(NodePtr root, Parser(text, std::move(tokens)).Run());
  if (root) {
    if (auto at = TooDeepAt(*root)) {
      return SyntaxError(text, *at,
                         "expression nested too deeply (the limit is " + std::to_string(kMaxTreeDepth) + " levels)");
    }
  }
  return root;
}

}  // namespace mmirage::query::internal
