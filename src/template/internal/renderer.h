// Internal: the tree-walking evaluator. One Renderer per Render call (not thread-safe; cheap to create).
// Borrowed values point into the context, the program's literals or loop holders, all of which outlive the
// expressions that use them; locals are stored owned.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "template/internal/ast.h"
#include "template/internal/filters.h"
#include "template/internal/runtime.h"

namespace mmirage::tmpl::internal {

struct LoopState {
  int64_t index0 = 0;
  int64_t length = 0;
  const std::vector<Val>* items = nullptr;
};

class Renderer {
 public:
  explicit Renderer(const Value& vars);
  Status Exec(const Body& body, std::string* out);
  Result<Val> Eval(const Expr& e);

 private:
  struct Entry {
    std::string_view name;
    Val val;
  };
  struct Frame {
    std::vector<Entry> vars;
    bool barrier = false;  // macro frame: lookups continue at the root frame
  };

  Status ExecBody(const Body& body, std::string* out);
  Status ExecStmt(const Stmt& s, std::string* out);
  Status ExecFor(const Stmt& s, std::string* out);
  Status Assign(std::string_view name, Val v);
  // Binds loop/set targets (unpacking when `tuple`); `own` copies borrowed values (set), a loop keeps
  // borrowing from its holder, which outlives the loop frame.
  Status AssignTargets(const std::vector<std::string>& targets, bool tuple, const Val& v, bool own);
  Val Lookup(std::string_view name) const;
  const Val* FindLocal(std::string_view name) const;  // nullptr when no frame binds `name`
  Entry* FindEntry(std::string_view name);

  Result<Val> EvalInner(const Expr& e);  // Eval without the depth guard: dispatches on the expression's kind
  // One kind of expression each (EvalInner's cases); errors as Python Jinja2 raises them.
  Result<Val> EvalSequence(const Expr& e);  // list or tuple literal
  Result<Val> EvalDict(const Expr& e);      // dict literal (string keys)
  Result<Val> EvalGetattr(const Expr& e);   // x.name (loop attributes included)
  Result<Val> EvalGetitem(const Expr& e);   // x[key]
  Result<Val> EvalSlice(const Expr& e);     // x[a:b:c]
  Result<Val> EvalCompare(const Expr& e);   // a < b <= c chains
  Result<Val> EvalConcat(const Expr& e);    // a ~ b
  Result<Val> EvalCall(const Expr& e);
  Status EvalArgs(const Expr& e, size_t first, CallArgs* args);
  Result<Val> CallValue(const Val& callee, CallArgs& args, const Expr& e);
  Result<Val> CallMacro(const Stmt& m, CallArgs& args);
  Result<Val> CallGlobal(std::string_view name, CallArgs& args);
  Result<Val> ApplyFilters(const Expr& e, Val input);
  Result<Val> LoopAttr(const LoopState& st, std::string_view name) const;

  const Value& vars_;
  std::vector<Frame> frames_;
  int depth_ = 0;                // macro calls in progress
  int eval_depth_ = 0;           // Eval/Exec frames in progress (kMaxEvalDepth)
  int64_t loop_iterations_ = 0;  // for-loop bodies run so far (kMaxLoopIterations)
  bool located_ = false;
};

}  // namespace mmirage::tmpl::internal
