// Lexer: Jinja2's default delimiters ({{ }}, {% %}, {# #}), whitespace control (`-`), raw blocks, and the
// expression tokens inside tags. Mirrors jinja2/lexer.py closely enough that the same templates split the same way.
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string>

#include "template/internal/ast.h"
#include "template/internal/unicode.h"

namespace mmirage::tmpl::internal {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

void RStripWs(std::string* s) {
  while (!s->empty() && IsSpace(s->back())) s->pop_back();
}

int CountLines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {}

  // The error behind Run's `failure`.
  TemplateError error(const Status& failure) const { return error_.value_or(TemplateError{line_, failure.message()}); }

  Result<std::vector<Token>> Run() {
    bool lstrip_next = false;
    while (pos_ < src_.size()) {
      if (lstrip_next) {
        while (pos_ < src_.size() && IsSpace(src_[pos_])) {
          if (src_[pos_] == '\n') ++line_;
          ++pos_;
        }
        lstrip_next = false;
      }
      size_t open = FindTagOpen(pos_);
      std::string data = src_.substr(pos_, open - pos_);
      int data_line = line_;
      line_ += CountLines(data);
      if (open >= src_.size()) {
        if (!data.empty()) tokens_.push_back(Token{TokenType::kData, data_line, std::move(data)});
        break;
      }
      char kind = src_[open + 1];
      bool minus = open + 2 < src_.size() && src_[open + 2] == '-';
      bool plus = open + 2 < src_.size() && src_[open + 2] == '+';
      if (minus) RStripWs(&data);
      if (!data.empty()) tokens_.push_back(Token{TokenType::kData, data_line, std::move(data)});
      pos_ = open + 2 + ((minus || plus) ? 1 : 0);
      if (kind == '#') {
        size_t end = src_.find("#}", pos_);
        if (end == std::string::npos) return LexErr(line_, "missing end of comment tag");
        lstrip_next = end > pos_ && src_[end - 1] == '-';
        line_ += CountLines(std::string_view(src_).substr(pos_, end - pos_));
        pos_ = end + 2;
        continue;
      }
      if (kind == '%' && IsRawStart()) {
        MMIRAGE_TRY(LexRaw(&lstrip_next));
        continue;
      }
      bool is_var = kind == '{';
      tokens_.push_back(Token{is_var ? TokenType::kVarBegin : TokenType::kBlockBegin, line_, ""});
      MMIRAGE_TRY(LexInside(is_var, &lstrip_next));
    }
    tokens_.push_back(Token{TokenType::kEof, line_, ""});
    return std::move(tokens_);
  }

 private:
  size_t FindTagOpen(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return src_.size();
  }

  void EmitData(std::string data) {
    if (!data.empty()) tokens_.push_back(Token{TokenType::kData, line_, std::move(data)});
  }

  // At pos_ (just after "{%" and an optional -/+): whitespace, "raw", whitespace, optional -, "%}".
  bool IsRawStart() {
    size_t i = pos_;
    while (i < src_.size() && IsSpace(src_[i])) ++i;
    if (src_.compare(i, 3, "raw") != 0) return false;
    i += 3;
    while (i < src_.size() && IsSpace(src_[i])) ++i;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
    return src_.compare(i, 2, "%}") == 0;
  }

  Status LexRaw(bool* lstrip_next) {
    size_t i = src_.find("%}", pos_);
    bool strip_inner = src_[i - 1] == '-';
    size_t body = i + 2;
    // Find {%[-+]? endraw [-]?%}
    size_t k = body;
    while (true) {
      k = src_.find("{%", k);
      if (k == std::string::npos) return LexErr(line_, "missing end of raw directive");
      size_t j = k + 2;
      bool minus = j < src_.size() && src_[j] == '-';
      if (minus || (j < src_.size() && src_[j] == '+')) ++j;
      while (j < src_.size() && IsSpace(src_[j])) ++j;
      if (src_.compare(j, 6, "endraw") == 0) {
        j += 6;
        while (j < src_.size() && IsSpace(src_[j])) ++j;
        bool end_minus = j < src_.size() && src_[j] == '-';
        if (end_minus || (j < src_.size() && src_[j] == '+')) ++j;
        if (src_.compare(j, 2, "%}") == 0) {
          std::string data = src_.substr(body, k - body);
          if (strip_inner) {
            size_t s = 0;
            while (s < data.size() && IsSpace(data[s])) ++s;
            data.erase(0, s);
          }
          if (minus) RStripWs(&data);
          line_ += CountLines(std::string_view(src_).substr(pos_, body - pos_));
          EmitData(data);
          line_ += CountLines(std::string_view(src_).substr(body, j + 2 - body));
          pos_ = j + 2;
          *lstrip_next = end_minus;
          return Status::OK();
        }
      }
      k += 2;
    }
  }

  Status LexInside(bool is_var, bool* lstrip_next) {
    int depth = 0;
    const char close = is_var ? '}' : '%';
    while (true) {
      while (pos_ < src_.size() && IsSpace(src_[pos_])) {
        if (src_[pos_] == '\n') ++line_;
        ++pos_;
      }
      if (pos_ >= src_.size()) return Status::OK();  // the parser reports the missing end of the tag
      if (depth == 0) {
        size_t p = pos_;
        bool minus = src_[p] == '-';
        if (minus || src_[p] == '+') ++p;
        if (p + 1 < src_.size() && src_[p] == close && src_[p + 1] == '}') {
          tokens_.push_back(Token{is_var ? TokenType::kVarEnd : TokenType::kBlockEnd, line_, ""});
          pos_ = p + 2;
          *lstrip_next = minus;
          return Status::OK();
        }
      }
      char c = src_[pos_];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t s = pos_;
        while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
          ++pos_;
        }
        tokens_.push_back(Token{TokenType::kName, line_, src_.substr(s, pos_ - s)});
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c))) {
        MMIRAGE_TRY(LexNumber());
        continue;
      }
      if (c == '\'' || c == '"') {
        MMIRAGE_TRY(LexString(c));
        continue;
      }
      static const char* kOps2[] = {"//", "**", "==", "!=", "<=", ">="};
      std::string op;
      for (const char* o : kOps2) {
        if (src_.compare(pos_, 2, o) == 0) op = o;
      }
      if (op.empty()) {
        if (std::string_view("+-*/%~<>=()[]{},.:|;").find(c) == std::string_view::npos) {
          return LexErr(line_, std::string("unexpected char '") + c + "'");
        }
        op = std::string(1, c);
      }
      if (op == "(" || op == "[" || op == "{") ++depth;
      if (op == ")" || op == "]" || op == "}") {
        if (depth > 0) --depth;
      }
      pos_ += op.size();
      tokens_.push_back(Token{TokenType::kOp, line_, op});
    }
  }

  Status LexNumber() {
    size_t s = pos_;
    auto digits = [&](size_t* p) {
      size_t start = *p;
      while (*p < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[*p])) ||
                                  (src_[*p] == '_' && *p > start && *p + 1 < src_.size() &&
                                   std::isdigit(static_cast<unsigned char>(src_[*p + 1]))))) {
        ++*p;
      }
      return *p > start;
    };
    bool after_dot = s > 0 && src_[s - 1] == '.';
    size_t p = s;
    // 0x / 0o / 0b prefixed integers
    if (src_[p] == '0' && p + 1 < src_.size() &&
        std::string_view("xXoObB").find(src_[p + 1]) != std::string_view::npos) {
      int base = (src_[p + 1] == 'x' || src_[p + 1] == 'X') ? 16 : (src_[p + 1] == 'o' || src_[p + 1] == 'O') ? 8 : 2;
      size_t q = p + 2;
      std::string digs;
      while (q < src_.size() && (std::isxdigit(static_cast<unsigned char>(src_[q])) || src_[q] == '_')) {
        if (src_[q] != '_') digs.push_back(src_[q]);
        ++q;
      }
      Token t{TokenType::kInt, line_, src_.substr(s, q - s)};
      auto r = std::from_chars(digs.data(), digs.data() + digs.size(), t.int_value, base);
      if (digs.empty() || r.ec != std::errc() || r.ptr != digs.data() + digs.size()) {
        return LexErr(line_, "invalid integer literal '" + t.text + "'");
      }
      tokens_.push_back(std::move(t));
      pos_ = q;
      return Status::OK();
    }
    digits(&p);
    bool is_float = false;
    if (!after_dot) {
      size_t q = p;
      if (q + 1 < src_.size() && src_[q] == '.' && std::isdigit(static_cast<unsigned char>(src_[q + 1]))) {
        ++q;
        digits(&q);
        is_float = true;
        p = q;
      }
      if (p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
        size_t r = p + 1;
        if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) ++r;
        if (digits(&r)) {
          is_float = true;
          p = r;
        }
      }
    }
    std::string text;
    for (size_t i = s; i < p; ++i) {
      if (src_[i] != '_') text.push_back(src_[i]);
    }
    Token t{is_float ? TokenType::kFloat : TokenType::kInt, line_, text};
    if (is_float) {
      t.float_value = std::strtod(text.c_str(), nullptr);
    } else {
      auto r = std::from_chars(text.data(), text.data() + text.size(), t.int_value);
      if (r.ec != std::errc()) return LexErr(line_, "integer literal too large: " + text);
    }
    tokens_.push_back(std::move(t));
    pos_ = p;
    return Status::OK();
  }

  Status LexString(char quote) {
    int start_line = line_;
    std::string out;
    size_t p = pos_ + 1;
    while (true) {
      if (p >= src_.size()) return LexErr(start_line, "unexpected end of string literal");
      char c = src_[p];
      if (c == quote) break;
      if (c == '\n') ++line_;
      if (c != '\\') {
        out.push_back(c);
        ++p;
        continue;
      }
      if (p + 1 >= src_.size()) return LexErr(start_line, "unexpected end of string literal");
      char e = src_[p + 1];
      p += 2;
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case '\\': out.push_back('\\'); break;
        case '\'': out.push_back('\''); break;
        case '"': out.push_back('"'); break;
        case 'a': out.push_back('\a'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'v': out.push_back('\v'); break;
        case '\n': ++line_; break;
        case 'x':
        case 'u':
        case 'U': {
          size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          auto r = std::from_chars(src_.data() + p, src_.data() + std::min(src_.size(), p + n), cp, 16);
          if (r.ec != std::errc() || r.ptr != src_.data() + p + n) {
            return LexErr(start_line, "invalid escape in string literal");
          }
          AppendCp(cp, &out);
          p += n;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = e - '0';
            for (int k = 0; k < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++k)
              cp = cp * 8 + (src_[p++] - '0');
            AppendCp(cp, &out);
          } else {
            out.push_back('\\');
            out.push_back(e);
            if (e == '\n') ++line_;
          }
      }
    }
    tokens_.push_back(Token{TokenType::kString, start_line, std::move(out)});
    pos_ = p + 1;
    return Status::OK();
  }

  // Records the error (error()) and returns it as a Status.
  Status LexErr(int line, std::string msg) {
    error_ = TemplateError{line, std::move(msg)};
    return error_->ToStatus();
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
  std::optional<TemplateError> error_;
};

}  // namespace

std::variant<std::vector<Token>, TemplateError> Lex(std::string_view source) {
  std::string src;
  src.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      src.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      src.push_back(source[i]);
    }
  }
  if (!src.empty() && src.back() == '\n') src.pop_back();
  Lexer lexer(std::move(src));
  Result<std::vector<Token>> tokens = lexer.Run();
  if (!tokens.ok()) return lexer.error(tokens.status());
  return std::move(*tokens);
}

}  // namespace mmirage::tmpl::internal
