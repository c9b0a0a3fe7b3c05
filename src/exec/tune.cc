// The search: the config's own settings first; then, knob by knob in the order of TuneKnobs (the most effective
// first), the coarse values from the best settings so far, and for numeric knobs the midpoints around the best
// value (coarse to fine). A value is kept only when it beats the best output tok/s by more than kMinGain (trial
// noise on a small sample). A new trial starts only when the longest trial so far still fits in the budget.

#include "exec/tune.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "data/json.h"
#include "exec/tune_space.h"
#include "exec/tune_trial.h"
#include "process/llm/engine_choice.h"
#include "process/llm/engine_factory.h"
#include "util/cpu_load.h"
#include "util/log.h"

namespace mmirage::exec {
namespace {

constexpr double kMinGain = 0.03;
// A trial runs at most budget / kTrialsPerBudget seconds after its model load (at least kMinTrialSeconds), so that
// a slow setting (one parallel sequence, say) leaves time for the others.
constexpr double kTrialsPerBudget = 8;
constexpr double kMinTrialSeconds = 1;

std::string ScalarText(const Value& v) { return v.is_string() ? v.as_string() : ToJson(v); }

double Round(double x, int digits) {
  double f = std::pow(10.0, digits);
  return std::round(x * f) / f;
}

// Deletes the trials' temporary directory on every path out.
struct TuneTempDir {
  Env* env;
  std::string path;
  ~TuneTempDir() {
    if (!path.empty()) (void)env->RemoveAll(path);
  }
};

std::vector<TuneSetting> With(std::vector<TuneSetting> changes, const std::string& key, const Value& v) {
  for (auto& s : changes) {
    if (s.key == key) {
      s.value = v;
      return changes;
    }
  }
  changes.push_back(TuneSetting{key, v});
  return changes;
}

// The processor that the first `llm` output is routed to: its index in config.processors.
Result<size_t> TunedProcessor(const config::Config& c) {
  for (const auto& o : c.processing.outputs) {
    const config::Processor* p = c.FindProcessor(o.type);
    if (p != nullptr && p->type == "llm") return static_cast<size_t>(p - c.processors.data());
  }
  return Status::InvalidArgument("tune: the config has no llm output: there is no engine to tune");
}

// Runs the search; appends every trial to rep->trials and sets rep->best.
class Search {
 public:
  // `tuned`: the config's processor `proc` with its backend chosen (the knobs depend on it).
  Search(const TuneOptions& opt, TrialInput base, size_t proc, config::Processor tuned, TuneReport* rep)
      : opt_(opt),
        base_(std::move(base)),
        proc_(proc),
        tuned_(std::move(tuned)),
        rep_(rep),
        start_us_(base_.env->MonotonicMicros()) {}

  Status Run() {
    TuneTrial own = Trial({});
    if (!own.ok) return Status::InvalidArgument("tune: the config's own settings failed: " + own.error);
    base_failed_ = own.failed_rows;
    Adopt(own, 0);
    const int cpus = rep_->num_gpus == 0 ? UsableCpus() : 0;
    std::vector<TuneKnob> knobs = TuneKnobs(tuned_, *opt_.config, cpus);
    for (const TuneKnob& knob : knobs) rep_->own.push_back(TuneSetting{knob.key, knob.current});
    for (const TuneKnob& knob : knobs) {
      if (!SearchKnob(knob)) {
        rep_->notes.push_back("the budget ran out before every setting was tried");
        break;
      }
    }
    // The first trial also warms caches up: measuring the config again keeps the gain honest.
    if (Fits()) {
      TuneTrial again = Trial({});
      if (again.ok && again.output_tokens_per_sec >= best_tps_) Adopt(again, rep_->trials.size() - 1);
    }
    return Status::OK();
  }

 private:
  double Elapsed() const { return static_cast<double>(base_.env->MonotonicMicros() - start_us_) / 1e6; }
  bool Fits() const { return Elapsed() + longest_ <= opt_.budget_seconds; }

  TuneTrial Trial(const std::vector<TuneSetting>& changes) {
    config::Config c = ApplyTuneSettings(*opt_.config, proc_, changes);
    TrialInput in = base_;
    in.config = &c;
    in.max_seconds = std::max(kMinTrialSeconds, opt_.budget_seconds / kTrialsPerBudget);
    TuneTrial tr = RunTuneTrial(in, &rep_->num_gpus);
    tr.changes = changes;
    if (tr.ok && tr.failed_rows > base_failed_) {
      tr.ok = false;
      tr.error = std::to_string(tr.failed_rows) +
                 " sample row(s) failed (the config's own settings: " + std::to_string(base_failed_) + "): " + tr.error;
    }
    LOG_INFO("tune: " << tr.Label() << ": " << (tr.ok ? Round(tr.output_tokens_per_sec, 1) : 0) << " output tok/s"
                      << (tr.ok ? "" : " (failed: " + tr.error + ")"));
    longest_ = std::max(longest_, tr.seconds);
    rep_->trials.push_back(tr);
    return tr;
  }

  void Adopt(const TuneTrial& tr, size_t index) {
    best_tps_ = tr.output_tokens_per_sec;
    rep_->best = index;
    best_changes_ = tr.changes;
  }

  // Tries `knob`'s values from the best settings so far. False when the budget ran out.
  bool SearchKnob(const TuneKnob& knob) {
    std::vector<Value> tried{knob.current};
    Value best_value = knob.current;
    const TuneTrial anchor = rep_->Best();
    auto attempt = [&](const Value& v) {
      // More parallel requests than sample rows measure nothing: the sample cannot fill them.
      if (knob.numeric_refine && v.is_int() && v.as_int() > rep_->sample_rows) return true;
      if (!Fits()) return false;
      TuneTrial tr = Trial(With(best_changes_, knob.key, v));
      tried.push_back(v);
      if (knob.key == "order" && tr.ok && anchor.rows_per_sec > 0) {
        bool prefix = v.is_string() && v.as_string() == "prefix";
        double ratio = tr.rows_per_sec / anchor.rows_per_sec;
        rep_->prefix_gain = prefix ? ratio : 1.0 / ratio;
      }
      if (tr.ok && tr.output_tokens_per_sec > best_tps_ * (1 + kMinGain)) {
        Adopt(rep_->trials.back(), rep_->trials.size() - 1);
        best_value = v;
      }
      return true;
    };
    for (const Value& v : knob.coarse)
      if (!attempt(v)) return false;
    if (!knob.numeric_refine) return true;
    for (const Value& v : RefineCandidates(best_value, tried))
      if (!attempt(v)) return false;
    return true;
  }

  const TuneOptions& opt_;
  TrialInput base_;
  size_t proc_;
  config::Processor tuned_;
  TuneReport* rep_;
  uint64_t start_us_;
  double longest_ = 0;
  double best_tps_ = 0;
  int64_t base_failed_ = 0;
  std::vector<TuneSetting> best_changes_;
};

}  // namespace

std::string TuneTrial::Label() const {
  if (changes.empty()) return "(config)";
  std::string s;
  for (const auto& c : changes) s += (s.empty() ? "" : " ") + c.key + "=" + ScalarText(c.value);
  return s;
}

config::Config ApplyTuneSettings(const config::Config& config, size_t processor_index,
                                 const std::vector<TuneSetting>& changes) {
  config::Config out = config;
  for (const TuneSetting& s : changes) {
    if (s.key == "order") {
      out.processing.order = s.value.as_string();
      continue;
    }
    config::LlmProcessor& llm = out.processors[processor_index].llm;
    if (s.key == "max_concurrency" && llm.endpoint && s.value.is_int()) {
      llm.endpoint->max_concurrency = s.value.as_int();
      continue;
    }
    if (!llm.extra_engine_args.is_object()) llm.extra_engine_args = Value::EmptyObject();
    llm.extra_engine_args.Set(s.key, s.value);
  }
  return out;
}

Result<TuneReport> RunTune(const TuneOptions& opt) {
  Env* env = opt.env ? opt.env : Env::Default();
  const config::Config& c = *opt.config;
  MMIRAGE_ASSIGN_OR_RETURN(size_t proc, TunedProcessor(c));
  TuneReport rep;
  rep.processor = c.processors[proc].type;
  // A Hub model id without `backend:` runs on SGLang or vLLM, chosen as `run` chooses: its knobs are that server's.
  MMIRAGE_ASSIGN_OR_RETURN(
      config::Processor tuned,
      process::llm::WithChosenEngine(env, c.processors[proc], process::llm::SystemEngineProbes(), nullptr, nullptr));
  rep.backend = tuned.llm.backend;
  rep.budget_seconds = opt.budget_seconds;
  const uint64_t start = env->MonotonicMicros();
  MMIRAGE_ASSIGN_OR_RETURN(TuneSample sample, DrawTuneSample(env, c, opt.sample_rows));
  rep.sample_rows = sample.rows;
  std::string tmp = config::ProcessVarLookup()("TMPDIR").value_or("/tmp");
  if (tmp.empty()) tmp = "/tmp";
  TuneTempDir dir{env, tmp + "/mmirage-tune-" + std::to_string(env->Pid()) + "-" + std::to_string(env->NowMicros())};
  MMIRAGE_TRY(env->CreateDirs(dir.path + "/state"));
  MMIRAGE_TRY(WriteFileAtomically(env, dir.path + "/sample.jsonl", sample.jsonl, false));
  process::EngineFactory factory =
      opt.engine_factory ? opt.engine_factory : process::llm::DefaultEngineFactory({dir.path + "/state", 0, nullptr});
  TrialInput base{env, nullptr, dir.path + "/sample.jsonl", &factory};
  Search search(opt, base, proc, std::move(tuned), &rep);
  MMIRAGE_TRY(search.Run());
  rep.elapsed_seconds = static_cast<double>(env->MonotonicMicros() - start) / 1e6;
  double own = 0;
  for (const TuneTrial& t : rep.trials)
    if (t.changes.empty() && t.ok) own = std::max(own, t.output_tokens_per_sec);
  const double best = rep.Best().output_tokens_per_sec;
  rep.gain = own > 0 ? best / own : 1;
  if (best > 0) rep.gpu_days_per_billion_tokens = std::max(1, rep.num_gpus) * 1e9 / best / 86400.0;
  if (rep.num_gpus == 0) rep.notes.push_back("no GPU: GPU-days are device-days of this machine");
  return rep;
}

Value TuneReport::ToValue() const {
  auto trial_value = [](const TuneTrial& t) {
    Value v = Value::EmptyObject();
    Value s = Value::EmptyObject();
    for (const auto& c : t.changes) s.Set(c.key, c.value);
    v.Set("settings", s);
    v.Set("label", t.Label());
    v.Set("ok", t.ok);
    v.Set("error", t.error.empty() ? Value() : Value(t.error));
    v.Set("output_tokens_per_sec", Round(t.output_tokens_per_sec, 2));
    v.Set("rows_per_sec", Round(t.rows_per_sec, 3));
    v.Set("p95_latency_seconds", Round(t.p95_latency_seconds, 3));
    v.Set("seconds", Round(t.seconds, 2));
    v.Set("load_seconds", Round(t.load_seconds, 2));
    v.Set("rows", t.rows);
    v.Set("failed_rows", t.failed_rows);
    v.Set("output_tokens", t.output_tokens);
    v.Set("prompt_tokens", t.prompt_tokens);
    v.Set("prompt_tokens_reused", t.prompt_tokens_reused);
    return v;
  };
  Value v = Value::EmptyObject();
  v.Set("processor", processor);
  v.Set("backend", backend);
  v.Set("sample_rows", sample_rows);
  v.Set("budget_seconds", Round(budget_seconds, 1));
  v.Set("elapsed_seconds", Round(elapsed_seconds, 1));
  Value own_settings = Value::EmptyObject();
  for (const auto& s : own) own_settings.Set(s.key, s.value);
  v.Set("own", own_settings);
  Value ts = Value::EmptyArray();
  for (const auto& t : trials) ts.Push(trial_value(t));
  v.Set("trials", ts);
  v.Set("best", trials.empty() ? Value() : trial_value(Best()));
  v.Set("gain", Round(gain, 3));
  v.Set("num_gpus", int64_t{num_gpus});
  v.Set("gpu_days_per_billion_tokens",
        gpu_days_per_billion_tokens ? Value(Round(*gpu_days_per_billion_tokens, 4)) : Value());
  v.Set("prefix_gain", prefix_gain ? Value(Round(*prefix_gain, 3)) : Value());
  Value n = Value::EmptyArray();
  for (const auto& s : notes) n.Push(s);
  v.Set("notes", n);
  return v;
}

}  // namespace mmirage::exec
