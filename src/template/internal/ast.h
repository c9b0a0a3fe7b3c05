// Internal: the parsed form of a template (expression and statement trees) and the Parse/Lex entry points.
// Immutable after parsing; shared by all copies of a Template and read concurrently by renders.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "data/value.h"
#include "template/template.h"
#include "util/status.h"

namespace mmirage::tmpl::internal {

using tmpl::TemplateError;

struct FilterDef;
struct TestDef;

enum class ExprKind : uint8_t {
  kLiteral,
  kName,
  kList,
  kTuple,
  kDict,
  kGetattr,
  kGetitem,
  kSlice,
  kCall,
  kFilter,
  kTest,
  kNeg,
  kPos,
  kNot,
  kBinary,
  kCompare,
  kAnd,
  kOr,
  kConcat,
  kCond,
};
enum class BinOp : uint8_t { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow };
enum class CmpOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// Children by kind (`args`):
//   kList/kTuple: items; kDict: key0, value0, key1, value1...; kGetattr: [object] (attribute in `name`);
//   kGetitem: [object, key]; kSlice: [object, start, stop, step] (null = omitted); kCall: [callee, positional...];
//   kFilter: [subject (null in filter blocks / block sets), positional...] (filter name in `name`);
//   kTest: [subject, positional...]; kNeg/kPos/kNot: [operand]; kBinary/kAnd/kOr: [lhs, rhs];
//   kCompare: [operand0, operand1, ...] with cmp_ops between them; kConcat: operands; kCond: [then, cond, else?].
struct Expr {
  Expr() = default;
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;
  ~Expr();  // iterative, so that deep trees never overflow the stack

  ExprKind kind = ExprKind::kLiteral;
  BinOp bin_op = BinOp::kAdd;
  bool negated = false;        // kTest: `is not`
  bool tuple_literal = false;  // kLiteral holding a tuple
  int line = 0;
  Value literal;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<CmpOp> cmp_ops;
  const FilterDef* filter = nullptr;
  const TestDef* test = nullptr;
};

enum class StmtKind : uint8_t { kText, kPrint, kIf, kFor, kSet, kSetBlock, kNsSet, kMacro, kFilterBlock, kWith };

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

// Fields by kind:
//   kText: text. kPrint: exprs = [value]. kIf: exprs = conditions, bodies = one per condition (+ else when
//   has_else). kFor: targets (tuple_target when unpacking), exprs = [iterable, filter-or-null], bodies = [body,
//   else]. kSet: targets, exprs = [value]. kSetBlock: targets = [name], exprs = [filter-chain-or-null],
//   bodies = [body]. kNsSet: targets = [namespace var], name = attribute, exprs = [value]. kMacro: name,
//   targets = parameters, exprs = defaults (null = none), bodies = [body]. kFilterBlock: exprs = [filter chain
//   with a null innermost subject], bodies = [body]. kWith: targets, exprs = values, bodies = [body].
struct Stmt {
  StmtKind kind = StmtKind::kText;
  bool has_else = false;
  bool tuple_target = false;
  int line = 0;
  std::string text;
  std::string name;
  std::vector<std::string> targets;
  std::vector<ExprPtr> exprs;
  std::vector<Body> bodies;
};

struct Program {
  Body body;
};

enum class TokenType : uint8_t {
  kData,
  kVarBegin,
  kVarEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInt,
  kFloat,
  kOp,
  kEof
};
struct Token {
  TokenType type;
  int line;
  std::string text;  // data / name / unescaped string / operator
  int64_t int_value = 0;
  double float_value = 0;
};

// Splits the (newline-normalized, trailing-newline-stripped) source into tokens, applying whitespace control,
// dropping comments and turning raw blocks into data. Errors: the first one, located.
std::variant<std::vector<Token>, TemplateError> Lex(std::string_view source);

// Parses tokens into a program. Errors: the first one, located.
std::variant<std::unique_ptr<Program>, TemplateError> ParseProgram(std::vector<Token> tokens);

}  // namespace mmirage::tmpl::internal
