// The rules, each firing only on evidence and naming it (they follow MMIRAGE's "Tuning for throughput" table):
//   gpu_util_low      mean GPU utilisation of the samples < 60 %; with few requests in flight (mean in-flight
//                     < 80 % of the engine's parallel slots) → raise batch_size (rows read ahead); with the slots
//                     full → raise max_running_requests
//   gpu_not_sampled   the engine ran on GPUs but no utilisation was sampled → run with --stats
//   stall             an attempt's longest stretch without new rows or output tokens ≥ max(3 sample periods,
//                     30 s): before the model was loaded → model load; after → I/O (reading, committing) or a
//                     stuck request
//   cpu_contention    a shard's machine CPU ≥ 90 % while mmirage itself used < 90 % of one core → other processes
//                     compete: dedicated cores (--cpus-per-task, fewer local_workers), n_threads
//   model_load        Σ model load ≥ 20 % of Σ shard runtime (and ≥ 10 s) → fewer, larger shards or a shared
//                     server
//   shard_skew        the slowest shard's working time (ShardWorkSeconds) ≥ 1.5 × the median (≥ 2 shards) →
//                     skew, explained by its rows' prompt/output lengths (usage.jsonl) or row count when they
//                     differ by ≥ 1.3 ×
//   memory_pressure   out-of-memory or KV-cache-full errors → smaller batch_size / max_running_requests or
//                     max_new_tokens
//   tokens_per_gpu_low  tokens/s/GPU < 1000 (the usual range starts there) → tune extra_engine_args
//   attempts_lost     attempts that failed, were interrupted or killed (the timeline marks them)

#include "stats/advice.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "data/json.h"

namespace mmirage {
namespace {

constexpr double kLowGpuUtilPct = 60;
constexpr double kFewInFlightFraction = 0.8;
constexpr double kStallPeriods = 3;
constexpr double kStallMinSeconds = 30;
constexpr double kModelLoadFraction = 0.2;
constexpr double kModelLoadMinSeconds = 10;
constexpr double kSkewRatio = 1.5;
constexpr double kExplainRatio = 1.3;
constexpr double kLowTokensPerGpu = 1000;
constexpr double kBusyMachinePct = 90;
constexpr double kStarvedProcessPct = 90;

std::string Fmt(double x, int nd = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", nd, x);
  return buf;
}
std::string Pct(double x) { return Fmt(x, 1) + " %"; }
std::string Secs(double x) { return Fmt(x, x < 10 ? 1 : 0) + " s"; }

std::optional<double> AggNum(const Value& agg, const char* key) {
  const Value* v = agg.is_object() ? agg.Find(key) : nullptr;
  return v && v->is_number() ? std::optional<double>(v->as_number()) : std::nullopt;
}

}  // namespace

std::optional<double> ShardWorkSeconds(const ShardReport& s) {
  if (s.record.status != ShardStatus::kSuccess || !s.stats) return std::nullopt;
  // Over every attempt (a resumed shard's last attempt did only the rest), model loads excluded.
  if (!s.timeline.empty() && !s.attempts.empty()) {
    double sum = 0;
    for (const AttemptSpan& a : s.attempts) sum += std::max(0.0, a.end - (a.loaded ? *a.loaded : a.start));
    return sum;
  }
  return s.stats->InferenceRuntime();
}

namespace {

std::optional<double> Pearson(const std::vector<double>& x, const std::vector<double>& y) {
  size_t n = x.size();
  if (n < 3 || y.size() != n) return std::nullopt;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i], my += y[i];
  mx /= static_cast<double>(n), my /= static_cast<double>(n);
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx <= 0 || syy <= 0) return std::nullopt;
  return sxy / std::sqrt(sxx * syy);
}

// The longest stretch of an attempt without progress: between two consecutive entries (a gap in the samples) or
// over several samples with unchanged row and output token counts.
struct Stall {
  double seconds = 0;
  double from = 0;
  bool before_load = false;
  int64_t shard = -1, attempt = 0;
};

void FindStalls(const ShardReport& s, Stall* worst) {
  auto consider = [&](double len, double from, bool before_load, int64_t attempt) {
    if (len <= worst->seconds) return;
    *worst = Stall{len, from, before_load, s.shard_id, attempt};
  };
  const auto& tl = s.timeline;
  int64_t attempt = -1;
  double stretch_from = 0, prev_t = 0;
  int64_t new_rows = 0;     // rows of this attempt (resumed ones excluded) at the stretch's start
  int64_t out_tok = 0;      // and output tokens: a slow engine that still generates is not stalled
  bool spans_load = false;  // the stretch contains the end of the model load
  for (const TimelineEntry& e : tl) {
    if (e.attempt != attempt || e.event == "start") {
      attempt = e.attempt;
      stretch_from = prev_t = e.t;
      new_rows = out_tok = 0;
      spans_load = false;
    }
    if (e.event == "loaded") spans_load = true;
    if (e.is_sample()) {
      if (e.t - prev_t > 0) consider(e.t - prev_t, prev_t, false, attempt);  // a hole in the samples
      int64_t n = e.rows - e.resumed;
      if (n > new_rows || e.out_tok > out_tok) {
        // The rows arrived somewhere after the previous entry: the stretch without rows ends there.
        consider(prev_t - stretch_from, stretch_from, spans_load, attempt);
        stretch_from = e.t;
        new_rows = n;
        out_tok = e.out_tok;
        spans_load = false;
      }
    } else if (e.event == "end") {
      consider(prev_t - stretch_from, stretch_from, spans_load, attempt);
    }
    prev_t = e.t;
  }
}

}  // namespace

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

SkewSummary ComputeSkew(const RunReport& run) {
  SkewSummary k;
  std::vector<double> times, prompt, output, rows, out_tok, in_tok;
  std::vector<const ShardReport*> shards;
  for (const ShardReport& s : run.shards) {
    auto t = ShardWorkSeconds(s);
    if (!t || *t <= 0) continue;
    shards.push_back(&s);
    times.push_back(*t);
    rows.push_back(static_cast<double>(s.stats->rows_processed));
    if (s.usage) {
      prompt.push_back(s.usage->MeanPrompt());
      output.push_back(s.usage->MeanCompletion());
    }
    out_tok.push_back(static_cast<double>(s.stats->output_tokens.value_or(0)));
    in_tok.push_back(static_cast<double>(s.stats->input_tokens.value_or(0)));
  }
  k.shards = static_cast<int>(times.size());
  if (times.empty()) return k;
  double mean = 0;
  for (double t : times) mean += t;
  mean /= static_cast<double>(times.size());
  double var = 0;
  for (double t : times) var += (t - mean) * (t - mean);
  var /= static_cast<double>(times.size());
  if (mean > 0) k.cv = std::sqrt(var) / mean;
  k.median_seconds = Median(times);
  size_t slow = static_cast<size_t>(std::max_element(times.begin(), times.end()) - times.begin());
  k.slowest_shard = shards[slow]->shard_id;
  k.slowest_seconds = times[slow];
  if (*k.median_seconds > 0) k.slowest_vs_median = times[slow] / *k.median_seconds;
  auto ratio = [](double x, double med) { return med > 0 ? std::optional<double>(x / med) : std::nullopt; };
  k.rows_ratio = ratio(rows[slow], Median(rows));
  if (prompt.size() == times.size()) {
    k.prompt_ratio = ratio(prompt[slow], Median(prompt));
    k.output_ratio = ratio(output[slow], Median(output));
  }
  k.corr_time_output_tokens = Pearson(times, out_tok);
  k.corr_time_prompt_tokens = Pearson(times, in_tok);
  return k;
}

namespace {

// The engines' parallel slots: the last "loaded" entry's capacity, else the config's max_running_requests.
std::optional<int64_t> EngineSlots(const RunReport& run) {
  std::optional<int64_t> capacity;
  for (const ShardReport& s : run.shards)
    for (const TimelineEntry& e : s.timeline)
      if (e.event == "loaded" && e.capacity) capacity = e.capacity;
  return capacity ? capacity : run.knobs.max_running_requests;
}

// GPU utilisation and requests in flight.
void GpuUtilRule(const RunReport& run, std::vector<Advice>* out) {
  double gpu_sum = 0, cpu_sum = 0, inflight_sum = 0;
  int64_t gpu_n = 0, cpu_n = 0, inflight_n = 0;
  const std::optional<int64_t> capacity = EngineSlots(run);
  for (const ShardReport& s : run.shards) {
    for (const TimelineEntry& e : s.timeline) {
      if (!e.is_sample()) continue;
      if (e.gpu) gpu_sum += *e.gpu, ++gpu_n;
      if (e.cpu) cpu_sum += *e.cpu, ++cpu_n;
      if (e.in_flight && e.rows > e.resumed) inflight_sum += static_cast<double>(*e.in_flight), ++inflight_n;
    }
  }
  auto num_gpus = AggNum(run.aggregate, "num_gpus");
  if (gpu_n > 0) {
    double mean = gpu_sum / static_cast<double>(gpu_n);
    if (mean < kLowGpuUtilPct) {
      std::string ev = "mean GPU utilisation " + Pct(mean) + " over " + std::to_string(gpu_n) + " samples";
      std::optional<double> inflight;
      if (inflight_n > 0) inflight = inflight_sum / static_cast<double>(inflight_n);
      if (inflight) ev += "; mean requests in flight " + Fmt(*inflight);
      if (capacity) ev += " for " + std::to_string(*capacity) + " engine slots";
      if (cpu_n > 0) ev += "; mmirage CPU " + Pct(cpu_sum / static_cast<double>(cpu_n)) + " of a core";
      bool few = inflight && capacity && *inflight < kFewInFlightFraction * static_cast<double>(*capacity);
      if (few || !inflight || !capacity) {
        out->push_back({"gpu_util_low", "warn",
                        "Few requests reach the engine: raise loading_params.batch_size (now " +
                            std::to_string(run.knobs.batch_size) +
                            ") so more rows are read ahead, and max_running_requests if the slots then fill; if "
                            "mmirage's CPU is near 100 %, reading and prompt rendering are the bottleneck",
                        ev});
      } else {
        out->push_back({"gpu_util_low", "warn",
                        "The engine's slots are full but the GPU idles: raise max_running_requests (now " +
                            std::to_string(*capacity) + ", in extra_engine_args) so more sequences decode together",
                        ev});
      }
    }
  } else if (num_gpus && *num_gpus > 0) {
    out->push_back({"gpu_not_sampled", "info",
                    "GPU utilisation was not sampled: run with --stats (MMIRAGE_COLLECT_STATS=1) to see it",
                    "num_gpus " + Fmt(*num_gpus, 0) + ", 0 GPU samples in the timelines"});
  }
}

// Stalls (long stretches without new rows).
void StallRule(const RunReport& run, std::vector<Advice>* out) {
  const double period = run.timeline_interval_seconds > 0 ? run.timeline_interval_seconds : 10;
  Stall worst;
  for (const ShardReport& s : run.shards) FindStalls(s, &worst);
  if (worst.shard >= 0 && worst.seconds >= std::max(kStallPeriods * period, kStallMinSeconds)) {
    std::string where = "shard " + std::to_string(worst.shard) + " attempt " + std::to_string(worst.attempt) +
                        ": no new rows or tokens for " + Secs(worst.seconds);
    if (worst.before_load) {
      out->push_back({"stall", "warn",
                      "Time goes to loading the model before any row is processed: keep the model on a fast local "
                      "disk, or run fewer, larger shards so each load is paid once",
                      where + " before the model was loaded"});
    } else {
      out->push_back({"stall", "warn",
                      "Rows stopped flowing after the model had loaded: look for slow I/O (dataset on a network "
                      "file system, output commits) or a request that hangs (request_timeout)",
                      where + " after the model was loaded"});
    }
  }
}

// CPU contention: the machine busy, mmirage starved.
void CpuContentionRule(const RunReport& run, std::vector<Advice>* out) {
  std::string busy;
  for (const ShardReport& s : run.shards) {
    if (!s.stats || !s.stats->machine_cpu_util_mean || !s.stats->cpu_util_mean) continue;
    if (*s.stats->machine_cpu_util_mean >= kBusyMachinePct && *s.stats->cpu_util_mean < kStarvedProcessPct &&
        busy.size() < 300) {
      busy += (busy.empty() ? "" : "; ") + std::string("shard ") + std::to_string(s.shard_id) + ": machine CPU " +
              Pct(*s.stats->machine_cpu_util_mean) + ", mmirage " + Pct(*s.stats->cpu_util_mean) + " of a core";
    }
  }
  if (!busy.empty()) {
    out->push_back({"cpu_contention", "warn",
                    "Other processes kept the machine's CPUs busy while mmirage got little of them: run shards on "
                    "dedicated cores (SLURM --cpus-per-task, fewer local_workers) and set n_threads to the cores "
                    "you own",
                    busy});
    for (Advice& a : *out)
      if (a.rule == "stall") a.evidence += "; the machine's CPUs were saturated meanwhile (cpu_contention)";
  }
}

// Model load share.
void ModelLoadRule(const RunReport& run, std::vector<Advice>* out) {
  auto sum_load = AggNum(run.aggregate, "sum_model_load_seconds");
  auto sum_runtime = AggNum(run.aggregate, "sum_shard_runtime_seconds");
  if (sum_load && sum_runtime && *sum_runtime > 0 && *sum_load >= kModelLoadMinSeconds &&
      *sum_load / *sum_runtime >= kModelLoadFraction) {
    out->push_back({"model_load", "warn",
                    "Model loading is a large share of the shards' time: run fewer, larger shards, or serve the model "
                    "once (an OpenAI-compatible server) and point every shard at it",
                    "model load " + Secs(*sum_load) + " of " + Secs(*sum_runtime) + " shard runtime (" +
                        Pct(*sum_load / *sum_runtime * 100) + ")"});
  }
}

// Skew across shards.
void SkewRule(const RunReport& run, std::vector<Advice>* out) {
  SkewSummary k = ComputeSkew(run);
  if (k.shards >= 2 && k.slowest_vs_median && *k.slowest_vs_median >= kSkewRatio) {
    std::string ev = "shard " + std::to_string(k.slowest_shard) + " took " + Secs(k.slowest_seconds) + ", " +
                     Fmt(*k.slowest_vs_median, 2) + "x the median " + Secs(*k.median_seconds);
    if (k.cv) ev += "; coefficient of variation " + Fmt(*k.cv, 2);
    std::vector<std::string> why;
    if (k.output_ratio && *k.output_ratio >= kExplainRatio)
      why.push_back("its rows generate " + Fmt(*k.output_ratio, 2) + "x the median output tokens per row");
    if (k.prompt_ratio && *k.prompt_ratio >= kExplainRatio)
      why.push_back("its prompts are " + Fmt(*k.prompt_ratio, 2) + "x the median length");
    if (k.rows_ratio && *k.rows_ratio >= kExplainRatio)
      why.push_back("it has " + Fmt(*k.rows_ratio, 2) + "x the median row count");
    std::string msg;
    if (!why.empty()) {
      std::string w;
      for (size_t i = 0; i < why.size(); ++i) w += (i ? "; " : "") + why[i];
      ev += "; " + w;
      msg =
          "Dataset skew: very long samples sit in one shard. Shuffle the dataset before sharding, or use more "
          "shards so long samples spread out";
      if (k.output_ratio && *k.output_ratio >= kExplainRatio && run.knobs.max_new_tokens)
        msg += "; consider a lower max_new_tokens (now " + std::to_string(*run.knobs.max_new_tokens) + ")";
    } else {
      ev += "; its rows' prompt/output lengths and row count are within " + Fmt(kExplainRatio, 1) + "x the median";
      msg = "One shard is much slower without longer data: check its node (host, other jobs, GPU clocks)";
    }
    out->push_back({"shard_skew", "warn", msg, ev});
  }
}

// Memory pressure.
void MemoryRule(const RunReport& run, std::vector<Advice>* out) {
  const std::optional<int64_t> capacity = EngineSlots(run);
  int64_t oom = 0, kv = 0;
  std::string shards_hit, example;
  for (const ShardReport& s : run.shards) {
    if (s.errors.out_of_memory + s.errors.kv_cache_full == 0) continue;
    oom += s.errors.out_of_memory;
    kv += s.errors.kv_cache_full;
    shards_hit += (shards_hit.empty() ? "" : ", ") + std::to_string(s.shard_id);
    if (example.empty()) example = s.errors.example;
  }
  if (oom + kv > 0) {
    std::string msg = "Memory runs out: reduce loading_params.batch_size (now " + std::to_string(run.knobs.batch_size) +
                      ") or max_running_requests" + (capacity ? " (now " + std::to_string(*capacity) + ")" : "") +
                      ", or max_new_tokens" +
                      (run.knobs.max_new_tokens ? " (now " + std::to_string(*run.knobs.max_new_tokens) + ")" : "");
    if (kv > 0) msg += "; a full KV cache also goes away with a larger context_length";
    out->push_back({"memory_pressure", "warn", msg,
                    std::to_string(oom) + " out-of-memory and " + std::to_string(kv) +
                        " KV-cache-full error(s) in shard(s) " + shards_hit + ", e.g. \"" + example + "\""});
  }
}

// Tokens per second per GPU.
void TokensPerGpuRule(const RunReport& run, std::vector<Advice>* out) {
  auto tpg = AggNum(run.aggregate, "tokens_per_sec_per_gpu");
  if (tpg && *tpg < kLowTokensPerGpu) {
    out->push_back({"tokens_per_gpu_low", "info",
                    "Low tokens/s/GPU: tune extra_engine_args (e.g. chunked_prefill_size, max_running_requests); "
                    "well-configured engines reach 1,000 to 5,000+ tokens/s/GPU depending on model size",
                    "tokens_per_sec_per_gpu " + Fmt(*tpg, 2)});
  }
}

// Attempts that did not finish.
void AttemptsLostRule(const RunReport& run, std::vector<Advice>* out) {
  int64_t lost = 0;
  std::string which;
  for (const ShardReport& s : run.shards) {
    for (const AttemptSpan& a : s.attempts) {
      if (a.outcome == "success" || a.outcome == "running") continue;
      ++lost;
      if (which.size() < 200)
        which += (which.empty() ? "" : ", ") + std::string("shard ") + std::to_string(s.shard_id) + " #" +
                 std::to_string(a.attempt) + " " + a.outcome;
    }
  }
  if (lost > 0) {
    out->push_back({"attempts_lost", "info",
                    "Some attempts did not finish; committed rows were resumed by the next attempt (the timeline "
                    "marks them)",
                    std::to_string(lost) + " attempt(s): " + which});
  }
}

}  // namespace

std::vector<Advice> ComputeAdvice(const RunReport& run) {
  std::vector<Advice> out;
  GpuUtilRule(run, &out);
  StallRule(run, &out);
  CpuContentionRule(run, &out);
  ModelLoadRule(run, &out);
  SkewRule(run, &out);
  MemoryRule(run, &out);
  TokensPerGpuRule(run, &out);
  AttemptsLostRule(run, &out);
  return out;
}

std::string FormatAdviceText(const std::vector<Advice>& advice) {
  if (advice.empty()) return "Advice: none (no rule of the tuning table fired)\n";
  std::string out = "Advice:\n";
  for (const Advice& a : advice) {
    out += "  [" + a.level + "] " + a.message + "\n";
    out += "         evidence: " + a.evidence + "\n";
  }
  return out;
}

}  // namespace mmirage
