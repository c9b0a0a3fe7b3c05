// The evaluator: statements (if/for/set/macro/filter/with) and expressions, with Jinja's scoping: a for loop
// body gets a fresh frame per iteration, a macro call a frame that sees only its arguments and the root frame.
#include "template/internal/renderer.h"

#include <string>

namespace mmirage::tmpl::internal {
namespace {

constexpr int kMaxDepth = 200;
constexpr std::string_view kGlobals[] = {"range", "dict", "namespace", "lipsum", "cycler", "joiner"};

Status Locate(const Status& st, int line) {
  return Status::InvalidArgument("line " + std::to_string(line) + ": " + st.message());
}

}  // namespace

Renderer::Renderer(const Value& vars) : vars_(vars) {
  frames_.reserve(32);
  frames_.emplace_back();
}

Val Renderer::Lookup(std::string_view name) const {
  for (int i = static_cast<int>(frames_.size()) - 1; i >= 0; --i) {
    const Frame& f = frames_[i];
    for (auto it = f.vars.rbegin(); it != f.vars.rend(); ++it) {
      if (it->name == name) return it->val.Alias();
    }
    if (f.barrier && i > 1) i = 1;
  }
  if (const Value* v = vars_.Find(name)) return Val::Borrow(*v);
  for (std::string_view g : kGlobals) {
    if (g == name) {
      Val r;
      r.kind = Kind::kGlobal;
      r.text = std::string(name);
      return r;
    }
  }
  return Val::Undefined("'" + std::string(name) + "' is undefined");
}

const Val* Renderer::FindLocal(std::string_view name) const {
  for (int i = static_cast<int>(frames_.size()) - 1; i >= 0; --i) {
    const Frame& f = frames_[i];
    for (auto it = f.vars.rbegin(); it != f.vars.rend(); ++it) {
      if (it->name == name) return &it->val;
    }
    if (f.barrier && i > 1) i = 1;
  }
  return nullptr;
}

Renderer::Entry* Renderer::FindEntry(std::string_view name) {
  for (int i = static_cast<int>(frames_.size()) - 1; i >= 0; --i) {
    Frame& f = frames_[i];
    for (auto it = f.vars.rbegin(); it != f.vars.rend(); ++it) {
      if (it->name == name) return &*it;
    }
    if (f.barrier && i > 1) i = 1;
  }
  return nullptr;
}

Status Renderer::Assign(std::string_view name, Val v) {
  Frame& f = frames_.back();
  for (Entry& e : f.vars) {
    if (e.name == name) {
      e.val = std::move(v);
      return Status::OK();
    }
  }
  f.vars.push_back(Entry{name, std::move(v)});
  return Status::OK();
}

Status Renderer::AssignTargets(const std::vector<std::string>& targets, bool tuple, const Val& v, bool own) {
  if (!tuple) return Assign(targets[0], own ? v.Owned() : v.Alias());
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> parts, Iterate(v));
  if (parts.size() != targets.size()) {
    if (parts.size() > targets.size()) {
      return Err("too many values to unpack (expected " + std::to_string(targets.size()) + ")");
    }
    return Err("not enough values to unpack (expected " + std::to_string(targets.size()) + ", got " +
               std::to_string(parts.size()) + ")");
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    MMIRAGE_TRY(Assign(targets[i], own ? parts[i].Owned() : std::move(parts[i])));
  }
  return Status::OK();
}

Status Renderer::Exec(const Body& body, std::string* out) {
  if (eval_depth_ >= kMaxEvalDepth)
    return Err("maximum recursion depth exceeded: template nested too deeply at render time (the limit is 400 levels)");
  ++eval_depth_;
  Status st = ExecBody(body, out);
  --eval_depth_;
  return st;
}

Status Renderer::ExecBody(const Body& body, std::string* out) {
  for (const auto& s : body) {
    Status st = ExecStmt(*s, out);
    if (st.ok() && out->size() > kMaxStringBytes) st = Err("rendered text too large (the limit is 256 MiB)");
    if (!st.ok()) {
      if (!located_) {
        located_ = true;
        return Locate(st, s->line);
      }
      return st;
    }
  }
  return Status::OK();
}

Status Renderer::ExecStmt(const Stmt& s, std::string* out) {
  switch (s.kind) {
    case StmtKind::kText: out->append(s.text); return Status::OK();
    case StmtKind::kPrint: {
      const Expr& e = *s.exprs[0];
      if (e.kind == ExprKind::kName) {
        // Hot path: print a variable without building a Val.
        if (const Val* local = FindLocal(e.name)) {
          AppendStr(*local, out);
        } else if (const Value* v = vars_.Find(e.name)) {
          AppendStrValue(*v, out);
        } else {
          AppendStr(Lookup(e.name), out);
        }
        return Status::OK();
      }
      MMIRAGE_ASSIGN_OR_RETURN(Val v, Eval(e));
      if (NestedDeeperThan(v.v(), kMaxValueDepth)) return TooDeepValue();
      AppendStr(v, out);
      return Status::OK();
    }
    case StmtKind::kIf: {
      for (size_t i = 0; i < s.exprs.size(); ++i) {
        MMIRAGE_ASSIGN_OR_RETURN(Val c, Eval(*s.exprs[i]));
        if (Truthy(c)) return Exec(s.bodies[i], out);
      }
      if (s.has_else) return Exec(s.bodies.back(), out);
      return Status::OK();
    }
    case StmtKind::kFor: return ExecFor(s, out);
    case StmtKind::kSet: {
      MMIRAGE_ASSIGN_OR_RETURN(Val v, Eval(*s.exprs[0]));
      return AssignTargets(s.targets, s.tuple_target, v, /*own=*/true);
    }
    case StmtKind::kSetBlock: {
      std::string body;
      MMIRAGE_TRY(Exec(s.bodies[0], &body));
      Val v{Value(std::move(body))};
      if (s.exprs[0]) {
        MMIRAGE_ASSIGN_OR_RETURN(v, ApplyFilters(*s.exprs[0], std::move(v)));
        v = v.Owned();
      }
      return Assign(s.targets[0], std::move(v));
    }
    case StmtKind::kNsSet: {
      MMIRAGE_ASSIGN_OR_RETURN(Val v, Eval(*s.exprs[0]));
      Val owned = v.Owned();
      Entry* e = FindEntry(s.targets[0]);
      if (e == nullptr || e->val.shape != Shape::kNamespace || e->val.ref != nullptr || !e->val.own) {
        return Err("cannot assign attribute on non-namespace object");
      }
      e->val.own->Set(s.name, owned.v());
      return Status::OK();
    }
    case StmtKind::kMacro: {
      Val m;
      m.kind = Kind::kMacro;
      m.ptr = &s;
      m.text = s.name;
      return Assign(s.name, std::move(m));
    }
    case StmtKind::kFilterBlock: {
      std::string body;
      frames_.emplace_back();
      Status st = Exec(s.bodies[0], &body);
      frames_.pop_back();
      MMIRAGE_TRY(st);
      MMIRAGE_ASSIGN_OR_RETURN(Val v, ApplyFilters(*s.exprs[0], Val(Value(std::move(body)))));
      AppendStr(v, out);
      return Status::OK();
    }
    case StmtKind::kWith: {
      frames_.emplace_back();
      for (size_t i = 0; i < s.targets.size(); ++i) {
        auto v = Eval(*s.exprs[i]);
        if (!v.ok()) {
          frames_.pop_back();
          return v.status();
        }
        MMIRAGE_TRY(Assign(s.targets[i], v->Owned()));
      }
      Status st = Exec(s.bodies[0], out);
      frames_.pop_back();
      return st;
    }
  }
  return Status::OK();
}

Status Renderer::ExecFor(const Stmt& s, std::string* out) {
  MMIRAGE_ASSIGN_OR_RETURN(Val it, Eval(*s.exprs[0]));
  Val holder = it.Owned();
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> items, Iterate(holder));
  frames_.emplace_back();
  frames_.back().vars.reserve(s.targets.size() + 2);
  auto finish = [&](Status st) {
    frames_.pop_back();
    return st;
  };
  if (s.exprs[1]) {
    std::vector<Val> kept;
    for (Val& item : items) {
      if (++loop_iterations_ > kMaxLoopIterations) {
        return finish(Err("too many loop iterations (the limit is 10000000 per render)"));
      }
      frames_.back().vars.clear();
      Status st = AssignTargets(s.targets, s.tuple_target, item, /*own=*/false);
      if (!st.ok()) return finish(st);
      auto c = Eval(*s.exprs[1]);
      if (!c.ok()) return finish(c.status());
      if (Truthy(*c)) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  LoopState loop;
  loop.length = static_cast<int64_t>(items.size());
  loop.items = &items;
  for (size_t i = 0; i < items.size(); ++i) {
    if (++loop_iterations_ > kMaxLoopIterations) {
      return finish(Err("too many loop iterations (the limit is 10000000 per render)"));
    }
    loop.index0 = static_cast<int64_t>(i);
    Frame& f = frames_.back();
    f.vars.clear();
    Val lv;
    lv.kind = Kind::kLoop;
    lv.ptr = &loop;
    f.vars.push_back(Entry{"loop", std::move(lv)});
    Status st = AssignTargets(s.targets, s.tuple_target, items[i], /*own=*/false);
    if (st.ok()) st = Exec(s.bodies[0], out);
    if (!st.ok()) return finish(st);
  }
  frames_.pop_back();
  if (items.empty() && s.has_else) return Exec(s.bodies[1], out);
  return Status::OK();
}

Result<Val> Renderer::LoopAttr(const LoopState& st, std::string_view name) const {
  int64_t i = st.index0, n = st.length;
  if (name == "index") return Val(Value(i + 1));
  if (name == "index0") return Val(Value(i));
  if (name == "revindex") return Val(Value(n - i));
  if (name == "revindex0") return Val(Value(n - i - 1));
  if (name == "first") return Val(Value(i == 0));
  if (name == "last") return Val(Value(i == n - 1));
  if (name == "length") return Val(Value(n));
  if (name == "depth") return Val(Value(int64_t{1}));
  if (name == "depth0") return Val(Value(int64_t{0}));
  if (name == "previtem") {
    if (i == 0) return Val::Undefined("there is no previous item");
    return (*st.items)[i - 1].Alias();
  }
  if (name == "nextitem") {
    if (i + 1 >= n) return Val::Undefined("there is no next item");
    return (*st.items)[i + 1].Alias();
  }
  return Val::Undefined("'LoopContext' object has no attribute '" + std::string(name) + "'");
}

Result<Val> Renderer::Eval(const Expr& e) {
  if (eval_depth_ >= kMaxEvalDepth) {
    if (located_)
      return Err(
          "maximum recursion depth exceeded: template nested too deeply at render time (the limit is 400 levels)");
    located_ = true;
    return Locate(
        Err("maximum recursion depth exceeded: template nested too deeply at render time (the limit is 400 levels)"),
        e.line);
  }
  ++eval_depth_;
  auto r = EvalInner(e);
  --eval_depth_;
  if (!r.ok() && !located_) {
    located_ = true;
    return Locate(r.status(), e.line);
  }
  return r;
}

Status Renderer::EvalArgs(const Expr& e, size_t first, CallArgs* args) {
  args->pos.reserve(e.args.size() - first);
  for (size_t i = first; i < e.args.size(); ++i) {
    MMIRAGE_ASSIGN_OR_RETURN(Val v, Eval(*e.args[i]));
    args->pos.push_back(std::move(v));
  }
  for (const auto& kv : e.kwargs) {
    MMIRAGE_ASSIGN_OR_RETURN(Val v, Eval(*kv.second));
    args->kw.emplace_back(kv.first, std::move(v));
  }
  return Status::OK();
}

Result<Val> Renderer::ApplyFilters(const Expr& e, Val input) {
  Val subject;
  if (e.args[0]) {
    MMIRAGE_ASSIGN_OR_RETURN(subject, ApplyFilters(*e.args[0], std::move(input)));
  } else {
    subject = std::move(input);
  }
  CallArgs args;
  MMIRAGE_TRY(EvalArgs(e, 1, &args));
  return e.filter->fn(std::move(subject), args);
}

Result<Val> Renderer::EvalInner(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kLiteral: {
      Val v = Val::Borrow(e.literal);
      if (e.tuple_literal) v.shape = Shape::kTuple;
      return v;
    }
    case ExprKind::kName: return Lookup(e.name);
    case ExprKind::kList:
    case ExprKind::kTuple: return EvalSequence(e);
    case ExprKind::kDict: return EvalDict(e);
    case ExprKind::kGetattr: return EvalGetattr(e);
    case ExprKind::kGetitem: return EvalGetitem(e);
    case ExprKind::kSlice: return EvalSlice(e);
    case ExprKind::kCall: return EvalCall(e);
    case ExprKind::kFilter: {
      MMIRAGE_ASSIGN_OR_RETURN(Val subject, Eval(*e.args[0]));
      CallArgs args;
      MMIRAGE_TRY(EvalArgs(e, 1, &args));
      MMIRAGE_ASSIGN_OR_RETURN(Val r, e.filter->fn(std::move(subject), args));
      return r;
    }
    case ExprKind::kTest: {
      MMIRAGE_ASSIGN_OR_RETURN(Val subject, Eval(*e.args[0]));
      CallArgs args;
      MMIRAGE_TRY(EvalArgs(e, 1, &args));
      MMIRAGE_ASSIGN_OR_RETURN(bool r, e.test->fn(subject, args));
      return Val(Value(e.negated ? !r : r));
    }
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      MMIRAGE_ASSIGN_OR_RETURN(Val v, Eval(*e.args[0]));
      return Negate(v, e.kind == ExprKind::kNeg);
    }
    case ExprKind::kNot: {
      MMIRAGE_ASSIGN_OR_RETURN(Val v, Eval(*e.args[0]));
      return Val(Value(!Truthy(v)));
    }
    case ExprKind::kBinary: {
      MMIRAGE_ASSIGN_OR_RETURN(Val a, Eval(*e.args[0]));
      MMIRAGE_ASSIGN_OR_RETURN(Val b, Eval(*e.args[1]));
      return BinaryOp(static_cast<int>(e.bin_op), a, b);
    }
    case ExprKind::kCompare: return EvalCompare(e);
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      MMIRAGE_ASSIGN_OR_RETURN(Val l, Eval(*e.args[0]));
      if (Truthy(l) == (e.kind == ExprKind::kOr)) return l;
      return Eval(*e.args[1]);
    }
    case ExprKind::kConcat: return EvalConcat(e);
    case ExprKind::kCond: {
      MMIRAGE_ASSIGN_OR_RETURN(Val c, Eval(*e.args[1]));
      if (Truthy(c)) return Eval(*e.args[0]);
      if (e.args[2]) return Eval(*e.args[2]);
      return Val::Undefined("the inline if-expression on line " + std::to_string(e.line) +
                            " evaluated to false and no else section was defined.");
    }
  }
  return Err("unknown expression");
}

Result<Val> Renderer::EvalSequence(const Expr& e) {
  std::vector<Val> items;
  items.reserve(e.args.size());
  for (const auto& a : e.args) {
    MMIRAGE_ASSIGN_OR_RETURN(Val v, Eval(*a));
    if (v.kind != Kind::kValue) return Err("cannot store a " + PyTypeName(v) + " in a list");
    items.push_back(std::move(v));
  }
  return MakeList(items, e.kind == ExprKind::kTuple ? Shape::kTuple : Shape::kPlain);
}

Result<Val> Renderer::EvalDict(const Expr& e) {
  Value obj = Value::EmptyObject();
  for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
    MMIRAGE_ASSIGN_OR_RETURN(Val k, Eval(*e.args[i]));
    MMIRAGE_ASSIGN_OR_RETURN(Val v, Eval(*e.args[i + 1]));
    if (k.kind != Kind::kValue || !k.v().is_string()) {
      return Err("dict keys must be strings in this engine (got " + PyTypeName(k) + ")");
    }
    obj.Set(k.v().as_string(), v.v());
  }
  return Val(std::move(obj));
}

Result<Val> Renderer::EvalGetattr(const Expr& e) {
  MMIRAGE_ASSIGN_OR_RETURN(Val obj, Eval(*e.args[0]));
  if (obj.kind == Kind::kLoop) return LoopAttr(*static_cast<const LoopState*>(obj.ptr), e.name);
  if (obj.ref == nullptr && obj.is_value()) {
    MMIRAGE_ASSIGN_OR_RETURN(Val r, GetAttr(obj, e.name));
    return r.Owned();
  }
  return GetAttr(obj, e.name);
}

Result<Val> Renderer::EvalGetitem(const Expr& e) {
  MMIRAGE_ASSIGN_OR_RETURN(Val obj, Eval(*e.args[0]));
  MMIRAGE_ASSIGN_OR_RETURN(Val key, Eval(*e.args[1]));
  if (obj.kind == Kind::kLoop && key.v().is_string()) {
    return LoopAttr(*static_cast<const LoopState*>(obj.ptr), key.v().as_string());
  }
  MMIRAGE_ASSIGN_OR_RETURN(Val r, GetItem(obj, key));
  return obj.ref == nullptr ? r.Owned() : r;
}

Result<Val> Renderer::EvalSlice(const Expr& e) {
  MMIRAGE_ASSIGN_OR_RETURN(Val obj, Eval(*e.args[0]));
  Val parts[3];
  const Val* ptrs[3] = {nullptr, nullptr, nullptr};
  for (int i = 0; i < 3; ++i) {
    if (e.args[i + 1]) {
      MMIRAGE_ASSIGN_OR_RETURN(parts[i], Eval(*e.args[i + 1]));
      ptrs[i] = &parts[i];
    }
  }
  return SliceOf(obj, ptrs[0], ptrs[1], ptrs[2]);
}

Result<Val> Renderer::EvalCompare(const Expr& e) {
  MMIRAGE_ASSIGN_OR_RETURN(Val left, Eval(*e.args[0]));
  for (size_t i = 0; i < e.cmp_ops.size(); ++i) {
    MMIRAGE_ASSIGN_OR_RETURN(Val right, Eval(*e.args[i + 1]));
    MMIRAGE_ASSIGN_OR_RETURN(bool ok, CompareOp(static_cast<int>(e.cmp_ops[i]), left, right));
    if (!ok) return Val(Value(false));
    left = std::move(right);
  }
  return Val(Value(true));
}

Result<Val> Renderer::EvalConcat(const Expr& e) {
  std::string s;
  for (const auto& a : e.args) {
    MMIRAGE_ASSIGN_OR_RETURN(Val v, Eval(*a));
    if (NestedDeeperThan(v.v(), kMaxValueDepth)) return TooDeepValue();
    AppendStr(v, &s);
    if (s.size() > kMaxStringBytes) return StringTooLarge();
  }
  return Val(Value(std::move(s)));
}

Result<Val> Renderer::EvalCall(const Expr& e) {
  const Expr& callee_expr = *e.args[0];
  Val callee;
  if (callee_expr.kind == ExprKind::kGetattr) {
    MMIRAGE_ASSIGN_OR_RETURN(Val obj, Eval(*callee_expr.args[0]));
    if (obj.kind == Kind::kLoop && callee_expr.name == "cycle") {
      CallArgs args;
      MMIRAGE_TRY(EvalArgs(e, 1, &args));
      if (args.pos.empty()) return Err("no items for cycling given");
      const auto* st = static_cast<const LoopState*>(obj.ptr);
      return args.pos[st->index0 % args.pos.size()].Owned();
    }
    if (obj.is_value() && obj.shape != Shape::kNamespace && HasMethod(obj.v(), callee_expr.name)) {
      CallArgs args;
      MMIRAGE_TRY(EvalArgs(e, 1, &args));
      bool found;
      MMIRAGE_ASSIGN_OR_RETURN(Val r, CallMethod(obj, callee_expr.name, args.pos, args.kw, &found));
      return r.Owned();
    }
    if (obj.kind == Kind::kLoop) {
      MMIRAGE_ASSIGN_OR_RETURN(callee, LoopAttr(*static_cast<const LoopState*>(obj.ptr), callee_expr.name));
    } else {
      MMIRAGE_ASSIGN_OR_RETURN(callee, GetAttr(obj, callee_expr.name));
      callee = callee.Owned();
    }
  } else {
    MMIRAGE_ASSIGN_OR_RETURN(callee, Eval(callee_expr));
  }
  CallArgs args;
  MMIRAGE_TRY(EvalArgs(e, 1, &args));
  return CallValue(callee, args, e);
}

Result<Val> Renderer::CallValue(const Val& callee, CallArgs& args, const Expr& e) {
  switch (callee.kind) {
    case Kind::kUndefined: return UndefinedErr(callee);
    case Kind::kMacro: return CallMacro(*static_cast<const Stmt*>(callee.ptr), args);
    case Kind::kGlobal: return CallGlobal(callee.text.str(), args);
    case Kind::kMethod: {
      Val self = callee.Alias();
      self.kind = Kind::kValue;
      bool found;
      MMIRAGE_ASSIGN_OR_RETURN(Val r, CallMethod(self, callee.text.str(), args.pos, args.kw, &found));
      return r.Owned();
    }
    default: return Err("'" + PyTypeName(callee) + "' object is not callable");
  }
}

Result<Val> Renderer::CallMacro(const Stmt& m, CallArgs& args) {
  if (depth_ >= kMaxDepth) return Err("maximum recursion depth exceeded");
  if (args.pos.size() > m.targets.size()) {
    return Err("macro '" + m.name + "' takes not more than " + std::to_string(m.targets.size()) + " argument(s)");
  }
  for (const auto& kv : args.kw) {
    bool known = false;
    for (size_t i = 0; i < m.targets.size(); ++i) {
      if (m.targets[i] == kv.first) {
        known = true;
        if (i < args.pos.size())
          return Err("macro '" + m.name + "' got multiple values for argument '" + kv.first + "'");
      }
    }
    if (!known) return Err("macro '" + m.name + "' takes no keyword argument '" + kv.first + "'");
  }
  Frame frame;
  frame.barrier = true;
  frames_.push_back(std::move(frame));
  ++depth_;
  auto finish = [&](Status st) -> Result<Val> {
    frames_.pop_back();
    --depth_;
    return st;
  };
  for (size_t i = 0; i < m.targets.size(); ++i) {
    Val v;
    bool have = false;
    if (i < args.pos.size()) {
      v = args.pos[i].Owned();
      have = true;
    }
    for (auto& kv : args.kw) {
      if (kv.first == m.targets[i]) {
        v = kv.second.Owned();
        have = true;
      }
    }
    if (!have) {
      if (m.exprs[i]) {
        auto d = Eval(*m.exprs[i]);
        if (!d.ok()) return finish(d.status());
        v = d->Owned();
      } else {
        v = Val::Undefined("parameter '" + m.targets[i] + "' was not provided");
      }
    }
    Status st = Assign(m.targets[i], std::move(v));
    if (!st.ok()) return finish(st);
  }
  std::string out;
  Status st = Exec(m.bodies[0], &out);
  frames_.pop_back();
  --depth_;
  MMIRAGE_TRY(st);
  return Val(Value(std::move(out)));
}

Result<Val> Renderer::CallGlobal(std::string_view name, CallArgs& args) {
  if (name == "range") {
    if (!args.kw.empty()) return Err("range() takes no keyword arguments");
    if (args.pos.empty() || args.pos.size() > 3) return Err("range expected 1 to 3 arguments");
    int64_t p[3] = {0, 0, 1};
    for (size_t i = 0; i < args.pos.size(); ++i) {
      if (args.pos[i].kind != Kind::kValue || !IsIntLike(args.pos[i].v())) {
        return Err("'" + PyTypeName(args.pos[i]) + "' object cannot be interpreted as an integer");
      }
    }
    if (args.pos.size() == 1) {
      p[1] = IntOf(args.pos[0].v());
    } else {
      p[0] = IntOf(args.pos[0].v());
      p[1] = IntOf(args.pos[1].v());
      if (args.pos.size() == 3) p[2] = IntOf(args.pos[2].v());
    }
    if (p[2] == 0) return Err("range() arg 3 must not be zero");
    // Length as Python computes it, in 128-bit arithmetic (any int64 bounds and step).
    __int128 lo = p[0], hi = p[1], step = p[2], count = 0;
    if (step > 0 && lo < hi) count = (hi - lo - 1) / step + 1;
    if (step < 0 && lo > hi) count = (lo - hi - 1) / -step + 1;
    if (count > static_cast<__int128>(kMaxListItems)) return Err("range too large (the limit is 16777216 items)");
    Value::Array a;
    a.reserve(static_cast<size_t>(count));
    for (__int128 k = 0; k < count; ++k) a.emplace_back(static_cast<int64_t>(lo + k * step));
    return Val(Value(std::move(a)));
  }
  if (name == "dict" || name == "namespace") {
    Value::Object members;
    for (const Val& p : args.pos) {
      if (!p.v().is_object()) return Err(std::string(name) + "() positional argument must be a mapping");
      for (const auto& m : p.v().as_object()) members.push_back(m);
    }
    for (const auto& kv : args.kw) members.emplace_back(kv.first, kv.second.v());
    Val r{Value::ObjectFromMembers(std::move(members))};
    if (name == "namespace") r.shape = Shape::kNamespace;
    return r;
  }
  return Err("global function '" + std::string(name) + "' is not supported");
}

}  // namespace mmirage::tmpl::internal
