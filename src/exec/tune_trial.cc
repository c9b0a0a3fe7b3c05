#include "exec/tune_trial.h"

#include <algorithm>
#include <memory>
#include <mutex>

#include "data/dataset.h"
#include "data/json.h"
#include "pipeline/row_transform.h"
#include "pipeline/shard_runner.h"
#include "pipeline/stream_scheduler.h"

namespace mmirage::exec {
namespace {

constexpr uint64_t kScanRows = 5000;

// Request latencies of a trial (submit to answer), written from engine threads.
struct LatencyLog {
  std::mutex mu;
  std::vector<double> seconds;  // guarded by mu
};

// Forwards to the real engine and times each request.
class TimedEngine : public engine::Engine {
 public:
  TimedEngine(std::unique_ptr<engine::Engine> inner, Env* env, std::shared_ptr<LatencyLog> log)
      : inner_(std::move(inner)), env_(env), log_(std::move(log)) {}
  void Submit(engine::Request r, engine::CompletionCallback done) override {
    uint64_t start = env_->MonotonicMicros();
    inner_->Submit(std::move(r), [env = env_, log = log_, start, done = std::move(done)](engine::Completion c) {
      {
        std::lock_guard<std::mutex> l(log->mu);
        log->seconds.push_back(static_cast<double>(env->MonotonicMicros() - start) / 1e6);
      }
      done(std::move(c));
    });
  }
  int Capacity() const override { return inner_->Capacity(); }
  double LoadSeconds() const override { return inner_->LoadSeconds(); }
  int NumGpus() const override { return inner_->NumGpus(); }
  void Shutdown() override { inner_->Shutdown(); }

 private:
  std::unique_ptr<engine::Engine> inner_;
  Env* env_;
  std::shared_ptr<LatencyLog> log_;
};

double Percentile95(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(0.95 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// The index of the first output whose processor is `llm` (the prompt that sets the sample's strata).
size_t FirstModelOutput(const config::Config& c) {
  for (size_t i = 0; i < c.processing.outputs.size(); ++i) {
    const config::Processor* p = c.FindProcessor(c.processing.outputs[i].type);
    if (p != nullptr && p->type == "llm") return i;
  }
  return 0;
}

struct Candidate {
  uint64_t order = 0;
  size_t length = 0;
  std::string text;
};

}  // namespace

Result<TuneSample> DrawTuneSample(Env* env, const config::Config& c, int64_t n) {
  if (c.loading.datasets.empty()) return Status::InvalidArgument("tune: the config has no dataset");
  const config::DatasetConfig& ds = c.loading.datasets[0];
  MMIRAGE_ASSIGN_OR_RETURN(auto parts, ResolveDatasetParts(env, ds.type, ds.path, ds.splits));
  pipeline::RowTransform t(&c, env, ds.image_base_path.value_or(""));
  const size_t out = FirstModelOutput(c);
  std::vector<Candidate> cands;
  for (const DatasetPart& part : parts) {
    if (cands.size() >= kScanRows) break;
    RowStream stream(env, part, RowRange{0, kScanRows - cands.size()});
    RawRow raw;
    while (true) {
      MMIRAGE_ASSIGN_OR_RETURN(bool more, stream.Next(&raw));
      if (!more) break;
      std::string text = raw.value != nullptr ? ToJson(*raw.value) : std::string(raw.text);
      Result<Value> row = raw.value != nullptr ? Result<Value>(*raw.value) : ParseJson(text);
      if (!row.ok() || !row->is_object()) continue;
      auto vars = t.Extract(*row);
      if (!vars.ok) continue;
      auto prompt = t.RenderPrompt(out, vars.value);
      size_t length = prompt.ok ? prompt.value.size() : text.size();
      cands.push_back(Candidate{cands.size(), length, std::move(text)});
    }
  }
  if (cands.empty()) return Status::InvalidArgument("tune: " + ds.path + ": no row of the dataset can be used");
  // Strata of equal size by prompt length; the middle row of each, then back in dataset order.
  std::stable_sort(cands.begin(), cands.end(),
                   [](const Candidate& a, const Candidate& b) { return a.length < b.length; });
  const size_t k = std::min<size_t>(cands.size(), static_cast<size_t>(std::max<int64_t>(1, n)));
  std::vector<Candidate*> picked;
  for (size_t i = 0; i < k; ++i) picked.push_back(&cands[(2 * i + 1) * cands.size() / (2 * k)]);
  std::sort(picked.begin(), picked.end(), [](const Candidate* a, const Candidate* b) { return a->order < b->order; });
  TuneSample s;
  for (const Candidate* p : picked) s.jsonl += p->text + "\n";
  s.rows = static_cast<int64_t>(picked.size());
  return s;
}

TuneTrial RunTuneTrial(const TrialInput& in, int* num_gpus) {
  TuneTrial tr;
  Env* env = in.env;
  auto log = std::make_shared<LatencyLog>();
  process::EngineFactory timed = [&](const config::Processor& p,
                                     std::vector<std::string>* w) -> Result<std::unique_ptr<engine::Engine>> {
    MMIRAGE_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> e, (*in.factory)(p, w));
    *num_gpus = std::max(*num_gpus, e->NumGpus());
    return std::unique_ptr<engine::Engine>(std::make_unique<TimedEngine>(std::move(e), env, log));
  };
  const uint64_t t0 = env->MonotonicMicros();
  std::vector<std::string> warnings;
  auto gen = process::OutputGenerator::Create(env, *in.config, timed, &warnings);
  const uint64_t t1 = env->MonotonicMicros();
  tr.load_seconds = static_cast<double>(t1 - t0) / 1e6;
  if (!gen.ok()) {
    tr.error = gen.status().message();
    tr.seconds = tr.load_seconds;
    return tr;
  }
  const config::DatasetConfig& ds = in.config->loading.datasets[0];
  pipeline::RowTransform t(in.config, env, ds.image_base_path.value_or(""));
  RowStream stream(env, DatasetPart{"", {in.sample_path}}, RowRange{0, UINT64_MAX});
  pipeline::StreamOptions so = pipeline::StreamOptionsFor(*in.config, (*gen)->Capacity());
  pipeline::StreamTotals totals;
  std::string first_error;
  bool capped = false;
  auto sink = [&](pipeline::ProcessedBatch& b) {
    tr.rows += b.rows;
    tr.failed_rows += static_cast<int64_t>(b.failures.size());
    if (first_error.empty() && !b.failures.empty()) first_error = b.failures[0].error.message;
    if (in.max_seconds > 0 && static_cast<double>(env->MonotonicMicros() - t1) / 1e6 > in.max_seconds) {
      capped = true;
      return Status::Unavailable("tune: the trial's time is up");  // ends the stream; the rows done are measured
    }
    return Status::OK();
  };
  Status s = pipeline::RunStreaming(&stream, t, gen->get(), so, sink, &totals);
  if (capped) s = Status::OK();
  const uint64_t t2 = env->MonotonicMicros();
  tr.prompt_tokens_reused = (*gen)->Counters().prompt_tokens_reused;
  (*gen)->Shutdown();
  const double run_seconds = std::max(1e-6, static_cast<double>(t2 - t1) / 1e6);
  tr.seconds = static_cast<double>(t2 - t0) / 1e6;
  tr.output_tokens = totals.completion_tokens;
  tr.prompt_tokens = totals.prompt_tokens;
  tr.output_tokens_per_sec = static_cast<double>(tr.output_tokens) / run_seconds;
  tr.rows_per_sec = static_cast<double>(tr.rows) / run_seconds;
  {
    std::lock_guard<std::mutex> l(log->mu);
    tr.p95_latency_seconds = Percentile95(log->seconds);
  }
  if (!s.ok()) {
    tr.error = s.message();
    return tr;
  }
  tr.ok = true;
  tr.error = first_error;  // rows that failed: the caller compares their count with the config's own trial
  return tr;
}

}  // namespace mmirage::exec
