// Internal to the query module: splits a JMESPath expression into tokens.
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "data/value.h"
#include "util/status.h"

namespace mmirage::query::internal {

enum class Tok : uint8_t {
  kEof,
  kUnquotedIdentifier,
  kQuotedIdentifier,
  kNumber,
  kLiteral,  // `json` or 'raw string'; the value is in Token::value
  kDot,
  kStar,
  kFlatten,  // []
  kFilter,   // [?
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kLParen,
  kRParen,
  kComma,
  kColon,
  kPipe,
  kOr,
  kAnd,
  kNot,
  kExpRef,
  kCurrent,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
};

struct Token {
  Tok type = Tok::kEof;
  size_t begin = 0;  // byte offsets of the lexeme in the expression text
  size_t end = 0;
  int64_t number = 0;  // kNumber
  Value value;         // kLiteral: the value; identifiers: the (unescaped) name as a string
};

// Tokens of `text`, always ending with one kEof token. Fails with a syntax error (see SyntaxError) on an
// unknown character, an unterminated quote or an invalid JSON literal.
Result<std::vector<Token>> Tokenize(std::string_view text);

}  // namespace mmirage::query::internal
