// Template: parse once, render by walking the shared tree; the static-analysis helpers
// (UndeclaredVariables, PlainVariable) walk the same tree.
#include "template/template.h"

#include <exception>
#include <set>

#include "template/internal/ast.h"
#include "template/internal/renderer.h"

namespace mmirage::tmpl {

using internal::Body;
using internal::Expr;
using internal::ExprKind;
using internal::Stmt;
using internal::StmtKind;

Status TemplateError::ToStatus() const {
  return Status::InvalidArgument("line " + std::to_string(line) + ": " + message);
}

std::variant<Template, TemplateError> Template::ParseLocated(std::string_view source) {
  auto tokens = internal::Lex(source);
  if (auto* e = std::get_if<TemplateError>(&tokens)) return std::move(*e);
  auto program = internal::ParseProgram(std::get<std::vector<internal::Token>>(std::move(tokens)));
  if (auto* e = std::get_if<TemplateError>(&program)) return std::move(*e);
  return Template(
      std::shared_ptr<const internal::Program>(std::get<std::unique_ptr<internal::Program>>(std::move(program))));
}

Result<Template> Template::Parse(std::string_view source) {
  auto parsed = ParseLocated(source);
  if (auto* e = std::get_if<TemplateError>(&parsed)) return e->ToStatus();
  return std::get<Template>(std::move(parsed));
}

Result<std::string> Template::Render(const Value& vars) const {
  std::string out;
  out.reserve(256);
  MMIRAGE_TRY(RenderTo(vars, &out));
  return out;
}

Status Template::RenderTo(const Value& vars, std::string* out) const {
  static const Value kEmpty = Value::EmptyObject();
  // Last line of defence: every data error is a Status; an allocation failure on hostile data (std::bad_alloc,
  // std::length_error) must still fail the row, never the process.
  try {
    internal::Renderer r(vars.is_object() ? vars : kEmpty);
    return r.Exec(program_->body, out);
  } catch (const std::exception& e) { return Status::InvalidArgument(std::string("render failed: ") + e.what()); }
}

std::optional<std::string> Template::PlainVariable() const {
  const Body& b = program_->body;
  if (b.size() != 1 || b[0]->kind != StmtKind::kPrint) return std::nullopt;
  const Expr& e = *b[0]->exprs[0];
  if (e.kind != ExprKind::kName) return std::nullopt;
  return e.name;
}

namespace {

constexpr std::string_view kGlobals[] = {"range", "dict", "namespace", "lipsum", "cycler", "joiner"};

class UndeclaredWalker {
 public:
  std::set<std::string> found;

  void WalkBody(const Body& body) {
    for (const auto& s : body) WalkStmt(*s);
  }

 private:
  std::vector<std::set<std::string>> scopes_{{}};

  bool Declared(const std::string& n) const {
    for (const auto& s : scopes_) {
      if (s.count(n)) return true;
    }
    for (auto g : kGlobals) {
      if (g == n) return true;
    }
    return false;
  }
  void Declare(const std::string& n) { scopes_.back().insert(n); }

  void WalkExpr(const Expr* e) {
    if (e == nullptr) return;
    if (e->kind == ExprKind::kName && !Declared(e->name)) found.insert(e->name);
    for (const auto& a : e->args) WalkExpr(a.get());
    for (const auto& kv : e->kwargs) WalkExpr(kv.second.get());
  }

  // Walks a body in a fresh scope and returns the names it declared.
  std::set<std::string> Scoped(const Body& body, const std::vector<std::string>& names) {
    scopes_.emplace_back(names.begin(), names.end());
    WalkBody(body);
    std::set<std::string> declared = std::move(scopes_.back());
    scopes_.pop_back();
    return declared;
  }

  void WalkStmt(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::kText: break;
      case StmtKind::kPrint: WalkExpr(s.exprs[0].get()); break;
      case StmtKind::kIf: {
        std::set<std::string> common;
        bool first = true;
        for (size_t i = 0; i < s.bodies.size(); ++i) {
          if (i < s.exprs.size()) WalkExpr(s.exprs[i].get());
          std::set<std::string> d = Scoped(s.bodies[i], {});
          if (first) {
            common = d;
          } else {
            std::set<std::string> both;
            for (const auto& n : d) {
              if (common.count(n)) both.insert(n);
            }
            common = both;
          }
          first = false;
        }
        if (s.has_else) {
          for (const auto& n : common) Declare(n);
        }
        break;
      }
      case StmtKind::kFor: {
        WalkExpr(s.exprs[0].get());
        std::vector<std::string> names = s.targets;
        scopes_.emplace_back(names.begin(), names.end());
        WalkExpr(s.exprs[1].get());
        scopes_.back().insert("loop");
        WalkBody(s.bodies[0]);
        scopes_.pop_back();
        Scoped(s.bodies[1], {});
        break;
      }
      case StmtKind::kSet:
        WalkExpr(s.exprs[0].get());
        for (const auto& t : s.targets) Declare(t);
        break;
      case StmtKind::kSetBlock:
        Scoped(s.bodies[0], {});
        WalkExpr(s.exprs[0].get());
        Declare(s.targets[0]);
        break;
      case StmtKind::kNsSet:
        if (!Declared(s.targets[0])) found.insert(s.targets[0]);
        WalkExpr(s.exprs[0].get());
        break;
      case StmtKind::kMacro: {
        Declare(s.name);
        std::vector<std::string> names = s.targets;
        names.insert(names.end(), {"varargs", "kwargs", "caller"});
        scopes_.emplace_back(names.begin(), names.end());
        for (const auto& d : s.exprs) WalkExpr(d.get());
        WalkBody(s.bodies[0]);
        scopes_.pop_back();
        break;
      }
      case StmtKind::kFilterBlock:
        WalkExpr(s.exprs[0].get());
        Scoped(s.bodies[0], {});
        break;
      case StmtKind::kWith: {
        for (const auto& v : s.exprs) WalkExpr(v.get());
        Scoped(s.bodies[0], s.targets);
        break;
      }
    }
  }
};

}  // namespace

std::vector<std::string> Template::UndeclaredVariables() const {
  UndeclaredWalker w;
  w.WalkBody(program_->body);
  return std::vector<std::string>(w.found.begin(), w.found.end());
}

}  // namespace mmirage::tmpl
