#include "query/internal/jmespath_lexer.h"

#include <charconv>
#include <limits>
#include <string>

#include "data/json.h"
#include "data/utf8.h"
#include "query/internal/jmespath_ast.h"

namespace mmirage::query::internal {
namespace {

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }

// Index of the closing `quote` for a lexeme whose opening quote is at `open`, skipping backslash escapes;
// npos when unterminated.
size_t FindClosing(std::string_view text, size_t open, char quote) {
  for (size_t i = open + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == quote) {
      return i;
    }
  }
  return std::string_view::npos;
}

// Replaces every `\<quote>` by `<quote>`; other backslashes are kept as written.
std::string UnescapeQuote(std::string_view s, char quote) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == quote) {
      out += quote;
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  Result<std::vector<Token>> Run() {
    while (true) {
      while (pos_ < text_.size() &&
             (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
        ++pos_;
      }
      if (pos_ >= text_.size()) break;
      MMIRAGE_TRY(Next());
    }
    Token eof;
    eof.begin = eof.end = text_.size();
    tokens_.push_back(std::move(eof));
    return std::move(tokens_);
  }

 private:
  void Emit(Tok type, size_t length) {
    Token t;
    t.type = type;
    t.begin = pos_;
    t.end = pos_ + length;
    tokens_.push_back(std::move(t));
    pos_ += length;
  }
  // Emits `two` when the next character is `second`, else `one` (or an error when `one` is kEof).
  Status EmitPair(char second, Tok two, Tok one, std::string_view what) {
    if (pos_ + 1 < text_.size() && text_[pos_ + 1] == second) {
      Emit(two, 2);
      return Status::OK();
    }
    if (one == Tok::kEof) return SyntaxError(text_, pos_, what);
    Emit(one, 1);
    return Status::OK();
  }
  char PeekNext() const { return pos_ + 1 < text_.size() ? text_[pos_ + 1] : '\0'; }

  Status Next();
  Status Number();
  Status Quoted(char quote);

  std::string_view text_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
};

Status Lexer::Next() {
  const char c = text_[pos_];
  if (IsIdentStart(c)) {
    size_t end = pos_ + 1;
    while (end < text_.size() && IsIdentChar(text_[end])) ++end;
    Token t;
    t.type = Tok::kUnquotedIdentifier;
    t.begin = pos_;
    t.end = end;
    t.value = Value(text_.substr(pos_, end - pos_));
    tokens_.push_back(std::move(t));
    pos_ = end;
    return Status::OK();
  }
  if (IsDigit(c) || c == '-') return Number();
  switch (c) {
    case '.': Emit(Tok::kDot, 1); return Status::OK();
    case '*': Emit(Tok::kStar, 1); return Status::OK();
    case '@': Emit(Tok::kCurrent, 1); return Status::OK();
    case ']': Emit(Tok::kRBracket, 1); return Status::OK();
    case '{': Emit(Tok::kLBrace, 1); return Status::OK();
    case '}': Emit(Tok::kRBrace, 1); return Status::OK();
    case '(': Emit(Tok::kLParen, 1); return Status::OK();
    case ')': Emit(Tok::kRParen, 1); return Status::OK();
    case ',': Emit(Tok::kComma, 1); return Status::OK();
    case ':': Emit(Tok::kColon, 1); return Status::OK();
    case '[':
      if (PeekNext() == ']') {
        Emit(Tok::kFlatten, 2);
      } else if (PeekNext() == '?') {
        Emit(Tok::kFilter, 2);
      } else {
        Emit(Tok::kLBracket, 1);
      }
      return Status::OK();
    case '|': return EmitPair('|', Tok::kOr, Tok::kPipe, "");
    case '&': return EmitPair('&', Tok::kAnd, Tok::kExpRef, "");
    case '!': return EmitPair('=', Tok::kNe, Tok::kNot, "");
    case '<': return EmitPair('=', Tok::kLe, Tok::kLt, "");
    case '>': return EmitPair('=', Tok::kGe, Tok::kGt, "");
    case '=': return EmitPair('=', Tok::kEq, Tok::kEof, "expected '==', got '='");
    case '"':
    case '\'':
    case '`': return Quoted(c);
    default: break;
  }
  std::string detail = "unexpected character '";
  // Whole UTF-8 sequence, so the message stays valid UTF-8.
  size_t end = pos_;
  (void)DecodeUtf8(text_, &end);
  detail.append(text_.substr(pos_, end - pos_));
  detail += "'";
  return SyntaxError(text_, pos_, detail);
}

Status Lexer::Number() {
  size_t end = pos_ + (text_[pos_] == '-' ? 1 : 0);
  const size_t digits = end;
  while (end < text_.size() && IsDigit(text_[end])) ++end;
  if (end == digits) return SyntaxError(text_, pos_, "expected a digit after '-'");
  Token t;
  t.type = Tok::kNumber;
  t.begin = pos_;
  t.end = end;
  auto [ptr, ec] = std::from_chars(text_.data() + pos_, text_.data() + end, t.number);
  (void)ptr;
  if (ec == std::errc::result_out_of_range) {
    // Out-of-range indices behave like any index past the end: clamp.
    t.number = text_[pos_] == '-' ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
  }
  tokens_.push_back(std::move(t));
  pos_ = end;
  return Status::OK();
}

Status Lexer::Quoted(char quote) {
  const size_t close = FindClosing(text_, pos_, quote);
  if (close == std::string_view::npos) {
    const char* what = quote == '"'    ? "unterminated quoted identifier"
                       : quote == '\'' ? "unterminated raw string literal"
                                       : "unterminated JSON literal";
    return SyntaxError(text_, pos_, what);
  }
  Token t;
  t.begin = pos_;
  t.end = close + 1;
  std::string_view body = text_.substr(pos_ + 1, close - pos_ - 1);
  if (quote == '"') {
    auto parsed = ParseJson(text_.substr(pos_, close - pos_ + 1));
    if (!parsed.ok() || !parsed->is_string()) { return SyntaxError(text_, pos_, "invalid quoted identifier"); }
    t.type = Tok::kQuotedIdentifier;
    t.value = std::move(*parsed);
  } else if (quote == '\'') {
    t.type = Tok::kLiteral;
    t.value = Value(UnescapeQuote(body, '\''));
  } else {
    t.type = Tok::kLiteral;
    const std::string json = UnescapeQuote(body, '`');
    auto parsed = ParseJson(json);
    if (!parsed.ok()) {
      // JEP-12 deprecation period: `foo` is the string "foo" (as the reference implementation does).
      size_t first = json.find_first_not_of(" \t\n\r");
      std::string quoted = "\"";
      if (first != std::string::npos) quoted.append(json, first);
      quoted += '"';
      parsed = ParseJson(quoted);
      if (!parsed.ok()) return SyntaxError(text_, pos_, "invalid JSON literal");
    }
    t.value = std::move(*parsed);
  }
  tokens_.push_back(std::move(t));
  pos_ = close + 1;
  return Status::OK();
}

}  // namespace

Result<std::vector<Token>> Tokenize(std::string_view text) { return Lexer(text).Run(); }

}  // namespace mmirage::query::internal
