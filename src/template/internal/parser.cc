// Parser: tokens -> statement/expression trees, following jinja2/parser.py's grammar and precedence
// (or < and < not < comparisons < +,- < ~ < *,/,//,% < ** < unary -,+ < filters/tests/calls/subscripts).
#include <memory>
#include <optional>
#include <string>

#include "template/internal/ast.h"
#include "template/internal/filters.h"

namespace mmirage::tmpl::internal {
namespace {

std::string Describe(const Token& t) {
  switch (t.type) {
    case TokenType::kData: return "template data";
    case TokenType::kVarBegin: return "begin of print statement";
    case TokenType::kVarEnd: return "end of print statement";
    case TokenType::kBlockBegin: return "begin of statement block";
    case TokenType::kBlockEnd: return "end of statement block";
    case TokenType::kName: return "'" + t.text + "'";
    case TokenType::kString: return "string";
    case TokenType::kInt: return "integer";
    case TokenType::kFloat: return "float";
    case TokenType::kOp: return "'" + t.text + "'";
    case TokenType::kEof: return "end of template";
  }
  return "token";
}

// Nesting limits (template.h): parser recursion (brackets, unary operators, `not`, nested blocks) and the depth
// of any expression tree (left-leaning chains such as `a + b + c...` or `x|f|g...` grow it without recursion).
constexpr int kMaxParseDepth = 200;
constexpr int kMaxExprTreeDepth = 300;

ExprPtr NewExpr(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  // The error behind Run's `failure`.
  TemplateError error(const Status& failure) const {
    return error_.value_or(TemplateError{Cur().line, failure.message()});
  }

  Result<std::unique_ptr<Program>> Run() {
    auto program = std::make_unique<Program>();
    std::string end;
    MMIRAGE_TRY(Subparse({}, &program->body, &end));
    return program;
  }

 private:
  // Counts one level of parser recursion; the destructor gives it back.
  class DepthGuard {
   public:
    explicit DepthGuard(Parser* p) : p_(p) { ++p_->depth_; }
    ~DepthGuard() { --p_->depth_; }
    bool too_deep() const { return p_->depth_ > kMaxParseDepth; }

   private:
    Parser* p_;
  };
  Status TooDeep() {
    return Fail("template nested too deeply (the limit is " + std::to_string(kMaxParseDepth) + " levels)");
  }
  const Token& Cur() const { return t_[pos_]; }
  const Token& Peek(size_t k = 1) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
  bool IsOp(std::string_view op) const { return Cur().type == TokenType::kOp && Cur().text == op; }
  bool IsName(std::string_view n) const { return Cur().type == TokenType::kName && Cur().text == n; }
  Status Fail(std::string msg) { return FailAt(Cur().line, std::move(msg)); }
  // Records the error (error()) and returns it as a Status.
  Status FailAt(int line, std::string msg) {
    error_ = TemplateError{line, std::move(msg)};
    return error_->ToStatus();
  }
  Status Unexpected(const std::string& expected) {
    return Fail("unexpected " + Describe(Cur()) + " (expected " + expected + ")");
  }
  Status ExpectOp(std::string_view op) {
    if (!IsOp(op)) return Unexpected("'" + std::string(op) + "'");
    ++pos_;
    return Status::OK();
  }
  Status ExpectBlockEnd() {
    if (Cur().type != TokenType::kBlockEnd) return Unexpected("end of statement block");
    ++pos_;
    return Status::OK();
  }
  Result<std::string> ExpectName() {
    if (Cur().type != TokenType::kName) return Unexpected("name");
    return t_[pos_++].text;
  }

  // Parses until a block tag whose name is in `ends`; leaves pos_ after that name and stores it in *end.
  Status Subparse(std::initializer_list<std::string_view> ends, Body* body, std::string* end) {
    while (true) {
      const Token& tok = Cur();
      if (tok.type == TokenType::kEof) {
        if (ends.size() == 0) return Status::OK();
        std::string want;
        for (auto e : ends) want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
        return Fail("unexpected end of template (looking for " + want + ")");
      }
      if (tok.type == TokenType::kData) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kText;
        s->line = tok.line;
        s->text = tok.text;
        body->push_back(std::move(s));
        ++pos_;
        continue;
      }
      if (tok.type == TokenType::kVarBegin) {
        ++pos_;
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kPrint;
        s->line = tok.line;
        MMIRAGE_ASSIGN_OR_RETURN(ExprPtr e, ParseTuple(false));
        s->exprs.push_back(std::move(e));
        if (Cur().type != TokenType::kVarEnd) return Unexpected("end of print statement");
        ++pos_;
        body->push_back(std::move(s));
        continue;
      }
      if (tok.type != TokenType::kBlockBegin) return Unexpected("template data");
      ++pos_;
      if (Cur().type != TokenType::kName) return Unexpected("statement name");
      std::string name = Cur().text;
      for (auto e : ends) {
        if (name == e) {
          ++pos_;
          *end = name;
          return Status::OK();
        }
      }
      MMIRAGE_TRY(ParseStatement(body));
    }
  }

  Status ParseStatement(Body* body) {
    DepthGuard guard(this);
    if (guard.too_deep()) return TooDeep();
    const Token& tok = Cur();
    auto s = std::make_unique<Stmt>();
    s->line = tok.line;
    std::string name = tok.text;
    ++pos_;
    if (name == "if") {
      MMIRAGE_TRY(ParseIf(s.get()));
    } else if (name == "for") {
      MMIRAGE_TRY(ParseFor(s.get()));
    } else if (name == "set") {
      MMIRAGE_TRY(ParseSet(s.get()));
    } else if (name == "macro") {
      MMIRAGE_TRY(ParseMacro(s.get()));
    } else if (name == "filter") {
      s->kind = StmtKind::kFilterBlock;
      int line = Cur().line;
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr chain, ParseFilterChain(nullptr));
      // `{% filter %}` without a name (Jinja: "expected token 'name'").
      if (chain == nullptr) { return FailAt(line, "expected a filter name after 'filter'"); }
      s->exprs.push_back(std::move(chain));
      MMIRAGE_TRY(ExpectBlockEnd());
      MMIRAGE_TRY(ParseBodyUntil({"endfilter"}, s.get()));
    } else if (name == "with") {
      s->kind = StmtKind::kWith;
      while (Cur().type != TokenType::kBlockEnd) {
        if (!s->targets.empty()) MMIRAGE_TRY(ExpectOp(","));
        MMIRAGE_ASSIGN_OR_RETURN(std::string target, ExpectName());
        MMIRAGE_TRY(ExpectOp("="));
        MMIRAGE_ASSIGN_OR_RETURN(ExprPtr v, ParseExpression());
        s->targets.push_back(std::move(target));
        s->exprs.push_back(std::move(v));
      }
      MMIRAGE_TRY(ExpectBlockEnd());
      MMIRAGE_TRY(ParseBodyUntil({"endwith"}, s.get()));
    } else if (name == "autoescape") {
      // Autoescape stays off in this engine; the block is parsed for its body only.
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr ignored, ParseExpression());
      (void)ignored;
      MMIRAGE_TRY(ExpectBlockEnd());
      s->kind = StmtKind::kWith;
      MMIRAGE_TRY(ParseBodyUntil({"endautoescape"}, s.get()));
    } else {
      pos_--;
      return Fail("unknown tag '" + name + "'");
    }
    body->push_back(std::move(s));
    return Status::OK();
  }

  Status ParseBodyUntil(std::initializer_list<std::string_view> ends, Stmt* s) {
    s->bodies.emplace_back();
    std::string end;
    MMIRAGE_TRY(Subparse(ends, &s->bodies.back(), &end));
    return ExpectBlockEnd();
  }

  Status ParseIf(Stmt* s) {
    s->kind = StmtKind::kIf;
    while (true) {
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr cond, ParseTuple(false));
      s->exprs.push_back(std::move(cond));
      MMIRAGE_TRY(ExpectBlockEnd());
      s->bodies.emplace_back();
      std::string end;
      MMIRAGE_TRY(Subparse({"elif", "else", "endif"}, &s->bodies.back(), &end));
      if (end == "elif") continue;
      if (end == "else") {
        MMIRAGE_TRY(ExpectBlockEnd());
        s->has_else = true;
        s->bodies.emplace_back();
        MMIRAGE_TRY(Subparse({"endif"}, &s->bodies.back(), &end));
      }
      return ExpectBlockEnd();
    }
  }

  Status ParseTargets(Stmt* s) {
    bool paren = IsOp("(");
    if (paren) ++pos_;
    while (true) {
      MMIRAGE_ASSIGN_OR_RETURN(std::string n, ExpectName());
      s->targets.push_back(std::move(n));
      if (!IsOp(",")) break;
      s->tuple_target = true;
      ++pos_;
      if (Cur().type != TokenType::kName) break;
    }
    if (paren) {
      s->tuple_target = true;
      MMIRAGE_TRY(ExpectOp(")"));
    }
    return Status::OK();
  }

  Status ParseFor(Stmt* s) {
    s->kind = StmtKind::kFor;
    MMIRAGE_TRY(ParseTargets(s));
    if (!IsName("in")) return Unexpected("'in'");
    ++pos_;
    MMIRAGE_ASSIGN_OR_RETURN(ExprPtr iter, ParseTuple(true));
    s->exprs.push_back(std::move(iter));
    ExprPtr filter;
    if (IsName("if")) {
      ++pos_;
      MMIRAGE_ASSIGN_OR_RETURN(filter, ParseExpression());
    }
    s->exprs.push_back(std::move(filter));
    if (IsName("recursive")) return Fail("recursive loops are not supported");
    MMIRAGE_TRY(ExpectBlockEnd());
    s->bodies.emplace_back();
    s->bodies.emplace_back();
    std::string end;
    MMIRAGE_TRY(Subparse({"endfor", "else"}, &s->bodies[0], &end));
    if (end == "else") {
      s->has_else = true;
      MMIRAGE_TRY(ExpectBlockEnd());
      MMIRAGE_TRY(Subparse({"endfor"}, &s->bodies[1], &end));
    }
    return ExpectBlockEnd();
  }

  Status ParseSet(Stmt* s) {
    if (Cur().type == TokenType::kName && Peek().type == TokenType::kOp && Peek().text == "." &&
        Peek(2).type == TokenType::kName) {
      s->kind = StmtKind::kNsSet;
      s->targets.push_back(Cur().text);
      s->name = Peek(2).text;
      pos_ += 3;
      MMIRAGE_TRY(ExpectOp("="));
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr v, ParseTuple(false));
      s->exprs.push_back(std::move(v));
      return ExpectBlockEnd();
    }
    MMIRAGE_TRY(ParseTargets(s));
    if (IsOp("=")) {
      s->kind = StmtKind::kSet;
      ++pos_;
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr v, ParseTuple(false));
      s->exprs.push_back(std::move(v));
      return ExpectBlockEnd();
    }
    if (s->tuple_target) return Unexpected("'='");
    s->kind = StmtKind::kSetBlock;
    ExprPtr chain;
    if (IsOp("|")) { MMIRAGE_ASSIGN_OR_RETURN(chain, ParseFilterChain(nullptr)); }
    s->exprs.push_back(std::move(chain));
    MMIRAGE_TRY(ExpectBlockEnd());
    return ParseBodyUntil({"endset"}, s);
  }

  Status ParseMacro(Stmt* s) {
    s->kind = StmtKind::kMacro;
    MMIRAGE_ASSIGN_OR_RETURN(s->name, ExpectName());
    MMIRAGE_TRY(ExpectOp("("));
    while (!IsOp(")")) {
      if (!s->targets.empty()) MMIRAGE_TRY(ExpectOp(","));
      if (IsOp(")")) break;
      MMIRAGE_ASSIGN_OR_RETURN(std::string p, ExpectName());
      ExprPtr def;
      if (IsOp("=")) {
        ++pos_;
        MMIRAGE_ASSIGN_OR_RETURN(def, ParseExpression());
      } else if (!s->exprs.empty() && s->exprs.back()) {
        return Fail("non-default argument follows default argument");
      }
      s->targets.push_back(std::move(p));
      s->exprs.push_back(std::move(def));
    }
    ++pos_;
    MMIRAGE_TRY(ExpectBlockEnd());
    return ParseBodyUntil({"endmacro"}, s);
  }

  // `| f(args) | g ...` applied to `subject` (null in filter blocks).
  Result<ExprPtr> ParseFilterChain(ExprPtr subject) {
    bool first = true;
    while (IsOp("|") || (first && subject == nullptr && Cur().type == TokenType::kName)) {
      if (IsOp("|")) ++pos_;
      first = false;
      MMIRAGE_ASSIGN_OR_RETURN(subject, ParseFilter(std::move(subject)));
    }
    return subject;
  }

  Result<ExprPtr> ParseFilter(ExprPtr subject) {
    int line = Cur().line;
    MMIRAGE_ASSIGN_OR_RETURN(std::string name, ExpectName());
    while (IsOp(".")) {
      ++pos_;
      MMIRAGE_ASSIGN_OR_RETURN(std::string part, ExpectName());
      name += "." + part;
    }
    auto e = NewExpr(ExprKind::kFilter, line);
    e->filter = FindFilter(name);
    if (e->filter == nullptr) { return FailAt(line, "no filter named '" + name + "'"); }
    e->name = name;
    e->args.push_back(std::move(subject));
    if (IsOp("(")) MMIRAGE_TRY(ParseCallArgs(e.get()));
    return e;
  }

  Status ParseCallArgs(Expr* e) {
    MMIRAGE_TRY(ExpectOp("("));
    bool first = true;
    while (!IsOp(")")) {
      if (!first) {
        MMIRAGE_TRY(ExpectOp(","));
        if (IsOp(")")) break;
      }
      first = false;
      if (IsOp("*") || IsOp("**")) return Fail("*args and **kwargs in calls are not supported");
      if (Cur().type == TokenType::kName && Peek().type == TokenType::kOp && Peek().text == "=") {
        std::string key = Cur().text;
        pos_ += 2;
        MMIRAGE_ASSIGN_OR_RETURN(ExprPtr v, ParseExpression());
        e->kwargs.emplace_back(std::move(key), std::move(v));
      } else {
        if (!e->kwargs.empty()) return Fail("invalid syntax for function call expression");
        MMIRAGE_ASSIGN_OR_RETURN(ExprPtr v, ParseExpression());
        e->args.push_back(std::move(v));
      }
    }
    ++pos_;
    return Status::OK();
  }

  // tuple without parentheses (`a, b`) where allowed.
  Result<ExprPtr> ParseTuple(bool simplified) {
    int line = Cur().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) {
        if (!IsOp(",")) break;
        ++pos_;
        is_tuple = true;
        if (Cur().type == TokenType::kVarEnd || Cur().type == TokenType::kBlockEnd || IsOp(")") || IsName("if")) {
          break;
        }
      }
      ExprPtr e;
      if (simplified) {
        MMIRAGE_ASSIGN_OR_RETURN(e, ParsePrimaryChain());
      } else {
        MMIRAGE_ASSIGN_OR_RETURN(e, ParseExpression());
      }
      items.push_back(std::move(e));
      if (!IsOp(",")) break;
    }
    if (!is_tuple && items.size() == 1) return std::move(items[0]);
    auto t = NewExpr(ExprKind::kTuple, line);
    t->args = std::move(items);
    return t;
  }

  Result<ExprPtr> ParsePrimaryChain() { return ParseOr(); }

 public:
  Result<ExprPtr> ParseExpression() {
    DepthGuard guard(this);
    if (guard.too_deep()) return TooDeep();
    MMIRAGE_ASSIGN_OR_RETURN(ExprPtr e, ParseOr());
    while (IsName("if")) {
      int line = Cur().line;
      ++pos_;
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr cond, ParseOr());
      ExprPtr other;
      if (IsName("else")) {
        ++pos_;
        MMIRAGE_ASSIGN_OR_RETURN(other, ParseExpression());
      }
      auto c = NewExpr(ExprKind::kCond, line);
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(other));
      e = std::move(c);
    }
    return e;
  }

 private:
  Result<ExprPtr> ParseOr() {
    MMIRAGE_ASSIGN_OR_RETURN(ExprPtr e, ParseAnd());
    while (IsName("or")) {
      int line = Cur().line;
      ++pos_;
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr r, ParseAnd());
      auto n = NewExpr(ExprKind::kOr, line);
      n->args.push_back(std::move(e));
      n->args.push_back(std::move(r));
      e = std::move(n);
    }
    return e;
  }

  Result<ExprPtr> ParseAnd() {
    MMIRAGE_ASSIGN_OR_RETURN(ExprPtr e, ParseNot());
    while (IsName("and")) {
      int line = Cur().line;
      ++pos_;
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr r, ParseNot());
      auto n = NewExpr(ExprKind::kAnd, line);
      n->args.push_back(std::move(e));
      n->args.push_back(std::move(r));
      e = std::move(n);
    }
    return e;
  }

  Result<ExprPtr> ParseNot() {
    DepthGuard guard(this);
    if (guard.too_deep()) return TooDeep();
    if (IsName("not")) {
      int line = Cur().line;
      ++pos_;
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr operand, ParseNot());
      auto n = NewExpr(ExprKind::kNot, line);
      n->args.push_back(std::move(operand));
      return n;
    }
    return ParseCompare();
  }

  Result<ExprPtr> ParseCompare() {
    int line = Cur().line;
    MMIRAGE_ASSIGN_OR_RETURN(ExprPtr e, ParseMath1());
    ExprPtr cmp;
    while (true) {
      CmpOp op;
      if (IsOp("==")) op = CmpOp::kEq;
      else if (IsOp("!=")) op = CmpOp::kNe;
      else if (IsOp("<")) op = CmpOp::kLt;
      else if (IsOp("<=")) op = CmpOp::kLe;
      else if (IsOp(">")) op = CmpOp::kGt;
      else if (IsOp(">=")) op = CmpOp::kGe;
      else if (IsName("in")) op = CmpOp::kIn;
      else if (IsName("not") && Peek().type == TokenType::kName && Peek().text == "in") {
        op = CmpOp::kNotIn;
        ++pos_;
      } else {
        break;
      }
      ++pos_;
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr r, ParseMath1());
      if (!cmp) {
        cmp = NewExpr(ExprKind::kCompare, line);
        cmp->args.push_back(std::move(e));
      }
      cmp->cmp_ops.push_back(op);
      cmp->args.push_back(std::move(r));
    }
    if (cmp) return cmp;
    return e;
  }

  Result<ExprPtr> Binary(ExprPtr l, ExprPtr r, BinOp op, int line) {
    auto n = NewExpr(ExprKind::kBinary, line);
    n->bin_op = op;
    n->args.push_back(std::move(l));
    n->args.push_back(std::move(r));
    return n;
  }

  Result<ExprPtr> ParseMath1() {
    MMIRAGE_ASSIGN_OR_RETURN(ExprPtr e, ParseConcat());
    while (IsOp("+") || IsOp("-")) {
      BinOp op = IsOp("+") ? BinOp::kAdd : BinOp::kSub;
      int line = Cur().line;
      ++pos_;
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr r, ParseConcat());
      MMIRAGE_ASSIGN_OR_RETURN(e, Binary(std::move(e), std::move(r), op, line));
    }
    return e;
  }

  Result<ExprPtr> ParseConcat() {
    int line = Cur().line;
    MMIRAGE_ASSIGN_OR_RETURN(ExprPtr e, ParseMath2());
    if (!IsOp("~")) return e;
    auto n = NewExpr(ExprKind::kConcat, line);
    n->args.push_back(std::move(e));
    while (IsOp("~")) {
      ++pos_;
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr r, ParseMath2());
      n->args.push_back(std::move(r));
    }
    return n;
  }

  Result<ExprPtr> ParseMath2() {
    MMIRAGE_ASSIGN_OR_RETURN(ExprPtr e, ParsePow());
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      BinOp op = IsOp("*") ? BinOp::kMul : IsOp("/") ? BinOp::kDiv : IsOp("//") ? BinOp::kFloorDiv : BinOp::kMod;
      int line = Cur().line;
      ++pos_;
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr r, ParsePow());
      MMIRAGE_ASSIGN_OR_RETURN(e, Binary(std::move(e), std::move(r), op, line));
    }
    return e;
  }

  Result<ExprPtr> ParsePow() {
    MMIRAGE_ASSIGN_OR_RETURN(ExprPtr e, ParseUnary(true));
    while (IsOp("**")) {
      int line = Cur().line;
      ++pos_;
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr r, ParseUnary(true));
      MMIRAGE_ASSIGN_OR_RETURN(e, Binary(std::move(e), std::move(r), BinOp::kPow, line));
    }
    return e;
  }

  Result<ExprPtr> ParseUnary(bool with_filter) {
    DepthGuard guard(this);
    if (guard.too_deep()) return TooDeep();
    int line = Cur().line;
    ExprPtr e;
    if (IsOp("-") || IsOp("+")) {
      auto n = NewExpr(IsOp("-") ? ExprKind::kNeg : ExprKind::kPos, line);
      ++pos_;
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary(false));
      n->args.push_back(std::move(operand));
      e = std::move(n);
    } else {
      MMIRAGE_ASSIGN_OR_RETURN(e, ParsePrimary());
    }
    MMIRAGE_ASSIGN_OR_RETURN(e, ParsePostfix(std::move(e)));
    if (with_filter) { MMIRAGE_ASSIGN_OR_RETURN(e, ParseFilterExpr(std::move(e))); }
    return e;
  }

  Result<ExprPtr> ParsePrimary();
  Result<ExprPtr> ParsePostfix(ExprPtr e);
  Result<ExprPtr> ParseFilterExpr(ExprPtr e);
  Result<ExprPtr> ParseTest(ExprPtr e);
  Result<ExprPtr> ParseSubscript(ExprPtr e);

  std::vector<Token> t_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::optional<TemplateError> error_;
};

// The depth of the deepest expression tree in `body`, stopping early past `limit` (iterative: the trees may be
// far deeper than the stack allows). Sets *line to the line of a node past the limit.
int MaxExprDepth(const Body& body, int limit, int* line) {
  std::vector<std::pair<const Expr*, int>> stack;
  std::vector<const Body*> bodies = {&body};
  int deepest = 0;
  while (!bodies.empty()) {
    const Body* b = bodies.back();
    bodies.pop_back();
    for (const auto& s : *b) {
      for (const auto& e : s->exprs) {
        if (e) stack.emplace_back(e.get(), 1);
      }
      for (const auto& sub : s->bodies) bodies.push_back(&sub);
    }
    while (!stack.empty()) {
      auto [e, d] = stack.back();
      stack.pop_back();
      if (d > deepest) deepest = d;
      if (d > limit) {
        *line = e->line;
        return d;
      }
      for (const auto& a : e->args) {
        if (a) stack.emplace_back(a.get(), d + 1);
      }
      for (const auto& kv : e->kwargs) {
        if (kv.second) stack.emplace_back(kv.second.get(), d + 1);
      }
    }
  }
  return deepest;
}

Result<ExprPtr> Parser::ParsePrimary() {
  const Token& tok = Cur();
  int line = tok.line;
  auto lit = [&](Value v) {
    auto e = NewExpr(ExprKind::kLiteral, line);
    e->literal = std::move(v);
    return e;
  };
  switch (tok.type) {
    case TokenType::kName: {
      ++pos_;
      const std::string& n = tok.text;
      if (n == "true" || n == "True") return lit(Value(true));
      if (n == "false" || n == "False") return lit(Value(false));
      if (n == "none" || n == "None") return lit(Value());
      auto e = NewExpr(ExprKind::kName, line);
      e->name = n;
      return e;
    }
    case TokenType::kString: {
      std::string s;
      while (Cur().type == TokenType::kString) s += t_[pos_++].text;
      return lit(Value(std::move(s)));
    }
    case TokenType::kInt: ++pos_; return lit(Value(tok.int_value));
    case TokenType::kFloat: ++pos_; return lit(Value(tok.float_value));
    case TokenType::kOp: break;
    default: return Unexpected("expression");
  }
  if (IsOp("(")) {
    ++pos_;
    if (IsOp(")")) {
      ++pos_;
      return NewExpr(ExprKind::kTuple, line);
    }
    MMIRAGE_ASSIGN_OR_RETURN(ExprPtr e, ParseTuple(false));
    MMIRAGE_TRY(ExpectOp(")"));
    return e;
  }
  if (IsOp("[") || IsOp("{")) {
    bool is_dict = IsOp("{");
    auto e = NewExpr(is_dict ? ExprKind::kDict : ExprKind::kList, line);
    ++pos_;
    const char* close = is_dict ? "}" : "]";
    while (!IsOp(close)) {
      if (!e->args.empty()) {
        MMIRAGE_TRY(ExpectOp(","));
        if (IsOp(close)) break;
      }
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
      e->args.push_back(std::move(item));
      if (is_dict) {
        MMIRAGE_TRY(ExpectOp(":"));
        MMIRAGE_ASSIGN_OR_RETURN(ExprPtr v, ParseExpression());
        e->args.push_back(std::move(v));
      }
    }
    ++pos_;
    return e;
  }
  return Unexpected("expression");
}

Result<ExprPtr> Parser::ParsePostfix(ExprPtr e) {
  while (true) {
    if (IsOp(".") || IsOp("[")) {
      MMIRAGE_ASSIGN_OR_RETURN(e, ParseSubscript(std::move(e)));
    } else if (IsOp("(")) {
      auto c = NewExpr(ExprKind::kCall, Cur().line);
      c->args.push_back(std::move(e));
      MMIRAGE_TRY(ParseCallArgs(c.get()));
      e = std::move(c);
    } else {
      return e;
    }
  }
}

Result<ExprPtr> Parser::ParseFilterExpr(ExprPtr e) {
  while (true) {
    if (IsOp("|")) {
      ++pos_;
      MMIRAGE_ASSIGN_OR_RETURN(e, ParseFilter(std::move(e)));
    } else if (IsName("is")) {
      MMIRAGE_ASSIGN_OR_RETURN(e, ParseTest(std::move(e)));
    } else if (IsOp("(")) {
      auto c = NewExpr(ExprKind::kCall, Cur().line);
      c->args.push_back(std::move(e));
      MMIRAGE_TRY(ParseCallArgs(c.get()));
      e = std::move(c);
    } else {
      return e;
    }
  }
}

Result<ExprPtr> Parser::ParseTest(ExprPtr e) {
  int line = Cur().line;
  ++pos_;  // is
  bool negated = false;
  if (IsName("not")) {
    negated = true;
    ++pos_;
  }
  MMIRAGE_ASSIGN_OR_RETURN(std::string name, ExpectName());
  while (IsOp(".")) {
    ++pos_;
    MMIRAGE_ASSIGN_OR_RETURN(std::string part, ExpectName());
    name += "." + part;
  }
  auto t = NewExpr(ExprKind::kTest, line);
  t->test = FindTest(name);
  if (t->test == nullptr) return FailAt(line, "no test named '" + name + "'");
  t->name = name;
  t->negated = negated;
  t->args.push_back(std::move(e));
  if (IsOp("(")) {
    MMIRAGE_TRY(ParseCallArgs(t.get()));
  } else {
    const Token& c = Cur();
    bool arg_follows = c.type == TokenType::kString || c.type == TokenType::kInt || c.type == TokenType::kFloat ||
                       (c.type == TokenType::kName && c.text != "else" && c.text != "or" && c.text != "and") ||
                       (c.type == TokenType::kOp && (c.text == "(" || c.text == "[" || c.text == "{"));
    if (c.type == TokenType::kName && c.text == "is") arg_follows = false;
    if (arg_follows) {
      MMIRAGE_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
      MMIRAGE_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
      t->args.push_back(std::move(arg));
    }
  }
  return t;
}

Result<ExprPtr> Parser::ParseSubscript(ExprPtr e) {
  int line = Cur().line;
  if (IsOp(".")) {
    ++pos_;
    if (Cur().type == TokenType::kName) {
      auto g = NewExpr(ExprKind::kGetattr, line);
      g->name = t_[pos_++].text;
      g->args.push_back(std::move(e));
      return g;
    }
    if (Cur().type == TokenType::kInt) {
      auto g = NewExpr(ExprKind::kGetitem, line);
      g->args.push_back(std::move(e));
      auto k = NewExpr(ExprKind::kLiteral, line);
      k->literal = Value(t_[pos_++].int_value);
      g->args.push_back(std::move(k));
      return g;
    }
    return Unexpected("name or number");
  }
  ++pos_;  // [
  ExprPtr parts[3];
  bool is_slice = false;
  int idx = 0;
  while (!IsOp("]")) {
    if (IsOp(":")) {
      is_slice = true;
      if (++idx > 2) return Unexpected("']'");
      ++pos_;
      continue;
    }
    if (parts[idx]) return Unexpected("']'");
    MMIRAGE_ASSIGN_OR_RETURN(parts[idx], is_slice ? ParseExpression() : ParseTuple(false));
  }
  ++pos_;
  if (!is_slice) {
    if (!parts[0]) return Fail("expected subscript expression");
    auto g = NewExpr(ExprKind::kGetitem, line);
    g->args.push_back(std::move(e));
    g->args.push_back(std::move(parts[0]));
    return g;
  }
  auto s = NewExpr(ExprKind::kSlice, line);
  s->args.push_back(std::move(e));
  for (auto& p : parts) s->args.push_back(std::move(p));
  return s;
}

}  // namespace

Expr::~Expr() {
  // Iterative teardown: a long chain (`1 + 1 + ...`, rejected by ParseProgram but built first) must not recurse
  // once per node.
  std::vector<ExprPtr> pending;
  auto take = [&](Expr& e) {
    for (auto& a : e.args) {
      if (a) pending.push_back(std::move(a));
    }
    for (auto& kv : e.kwargs) {
      if (kv.second) pending.push_back(std::move(kv.second));
    }
  };
  take(*this);
  while (!pending.empty()) {
    ExprPtr e = std::move(pending.back());
    pending.pop_back();
    take(*e);
  }
}

std::variant<std::unique_ptr<Program>, TemplateError> ParseProgram(std::vector<Token> tokens) {
  Parser parser(std::move(tokens));
  Result<std::unique_ptr<Program>> program = parser.Run();
  if (!program.ok()) return parser.error(program.status());
  int line = 0;
  if (MaxExprDepth((*program)->body, kMaxExprTreeDepth, &line) > kMaxExprTreeDepth) {
    return TemplateError{
        line, "expression nested too deeply (the limit is " + std::to_string(kMaxExprTreeDepth) + " levels)"};
  }
  return std::move(*program);
}

}  // namespace mmirage::tmpl::internal
