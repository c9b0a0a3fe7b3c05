#include "stats/aggregate.h"

#include <algorithm>
#include <cstdio>

#include "data/json.h"

namespace mmirage {
namespace {

Value OptD(const std::optional<double>& d) { return d ? Value(*d) : Value(); }
Value OptI(const std::optional<int64_t>& i) { return i ? Value(*i) : Value(); }
Value Human(const std::optional<double>& d) { return d ? Value(HumanDuration(*d)) : Value(); }
std::optional<double> Rounded(const std::optional<double>& d, int nd) {
  return d ? std::optional<double>(RoundTo(*d, nd)) : std::nullopt;
}

// Rows-weighted mean of a per-shard percentage; nullopt when no shard has the value and rows.
struct WeightedMean {
  double weighted = 0;
  int64_t rows = 0;
  void Add(const std::optional<double>& pct, int64_t shard_rows) {
    if (!pct || shard_rows <= 0) return;
    weighted += *pct * static_cast<double>(shard_rows);
    rows += shard_rows;
  }
  std::optional<double> Get() const {
    if (rows <= 0) return std::nullopt;
    return RoundTo(weighted / static_cast<double>(rows), 1);
  }
};

}  // namespace

Value AggregateStats(const std::vector<ShardStatsInput>& shards_in, int64_t num_shards) {
  std::vector<const ShardStatsInput*> shards;
  for (const auto& s : shards_in) shards.push_back(&s);
  std::sort(shards.begin(), shards.end(), [](auto* a, auto* b) { return a->shard_id < b->shard_id; });

  int64_t completed = 0, failed_rows = 0, rows = 0, input_tokens = 0, output_tokens = 0;
  std::optional<double> cost;      // batch_api with prices
  std::optional<double> cost_usd;  // hosted APIs with known prices
  bool any_contributing = false, token_data = false;
  std::optional<double> earliest_start, latest_finish, sum_runtime, min_runtime, max_runtime, sum_load;
  std::optional<int64_t> num_gpus;
  WeightedMean gpu_util, cpu_util;
  for (const ShardStatsInput* s : shards) {
    if (s->status != ShardStatus::kSuccess) continue;
    ++completed;
    failed_rows += s->failed_rows;
    if (!s->stats) continue;
    const ShardStats& st = *s->stats;
    any_contributing = true;
    rows += st.rows_processed;
    if (s->started_at_seconds && (!earliest_start || *s->started_at_seconds < *earliest_start)) {
      earliest_start = s->started_at_seconds;
    }
    if (s->finished_at_seconds && (!latest_finish || *s->finished_at_seconds > *latest_finish)) {
      latest_finish = s->finished_at_seconds;
    }
    if (st.runtime_seconds) {
      double r = *st.runtime_seconds;
      sum_runtime = sum_runtime.value_or(0) + r;
      min_runtime = min_runtime ? std::min(*min_runtime, r) : r;
      max_runtime = max_runtime ? std::max(*max_runtime, r) : r;
    }
    if (st.model_load_seconds) sum_load = sum_load.value_or(0) + *st.model_load_seconds;
    gpu_util.Add(st.gpu_util_mean, st.rows_processed);
    cpu_util.Add(st.cpu_util_mean, st.rows_processed);
    if (!num_gpus && st.num_gpus) num_gpus = st.num_gpus;
    if (st.input_tokens || st.output_tokens) token_data = true;
    input_tokens += st.input_tokens.value_or(0);
    output_tokens += st.output_tokens.value_or(0);
    if (st.cost) cost = cost.value_or(0) + *st.cost;
    if (st.cost_usd) cost_usd = cost_usd.value_or(0) + *st.cost_usd;
  }

  std::optional<double> wall;
  if (earliest_start && latest_finish) wall = RoundTo(*latest_finish - *earliest_start, 3);
  std::optional<double> inference;  // Σ runtime − Σ model load: the GPU-time view
  if (sum_runtime) inference = std::max(0.0, *sum_runtime - sum_load.value_or(0));
  std::optional<double> sum_inference;
  if (token_data && output_tokens > 0 && sum_runtime && num_gpus && *num_gpus > 0) {
    sum_inference = RoundTo(*inference, 3);
  }
  bool gpu_rates = sum_inference && *sum_inference > 0;
  const double out_tok = static_cast<double>(output_tokens);

  Value v = Value::EmptyObject();
  v.Set("total_shards", num_shards);
  v.Set("completed_shards", completed);
  v.Set("total_rows_processed", any_contributing ? Value(rows) : Value());
  v.Set("wall_clock_runtime_seconds", OptD(wall));
  v.Set("wall_clock_runtime_human", Human(wall));
  v.Set("sum_shard_runtime_seconds", OptD(Rounded(sum_runtime, 3)));
  v.Set("sum_shard_runtime_human", Human(Rounded(sum_runtime, 3)));
  v.Set("min_shard_runtime_seconds", OptD(Rounded(min_runtime, 3)));
  v.Set("min_shard_runtime_human", Human(Rounded(min_runtime, 3)));
  v.Set("max_shard_runtime_seconds", OptD(Rounded(max_runtime, 3)));
  v.Set("max_shard_runtime_human", Human(Rounded(max_runtime, 3)));
  v.Set("overall_throughput_rows_per_sec",
        rows > 0 && wall && *wall > 0 ? Value(RoundTo(static_cast<double>(rows) / *wall, 2)) : Value());
  v.Set("mean_gpu_util_pct", OptD(gpu_util.Get()));
  v.Set("num_gpus", OptI(num_gpus));
  v.Set("total_input_tokens", token_data ? Value(input_tokens) : Value());
  v.Set("total_output_tokens", token_data ? Value(output_tokens) : Value());
  v.Set("sum_model_load_seconds", OptD(Rounded(sum_load, 3)));
  v.Set("sum_inference_runtime_seconds", OptD(sum_inference));
  if (gpu_rates) {
    double gpus = static_cast<double>(*num_gpus);
    v.Set("tokens_per_sec_per_gpu", RoundTo(out_tok / (*sum_inference * gpus), 2));
    v.Set("gpu_days_per_billion_tokens", RoundTo((*sum_inference * gpus / 86400.0) / (out_tok / 1e9), 4));
  } else {
    v.Set("tokens_per_sec_per_gpu", Value());
    v.Set("gpu_days_per_billion_tokens", Value());
  }
  // Extensions.
  v.Set("total_tokens_per_sec",
        output_tokens > 0 && inference && *inference > 0 ? Value(RoundTo(out_tok / *inference, 2)) : Value());
  v.Set("mean_cpu_util_pct", OptD(cpu_util.Get()));
  v.Set("total_failed_rows", failed_rows);
  if (cost) v.Set("total_cost", RoundTo(*cost, 6));
  if (cost_usd) v.Set("total_cost_usd", RoundTo(*cost_usd, 6));
  return v;
}

std::string FormatAggregateTable(const Value& a) {
  auto num = [&](const char* key, const char* unit) -> std::string {
    const Value* x = a.Find(key);
    if (x == nullptr || x->is_null()) return "-";
    std::string s = x->is_int() ? std::to_string(x->as_int()) : FormatDouble(x->as_number());
    return unit[0] ? s + " " + unit : s;
  };
  auto text = [&](const char* key) -> std::string {
    const Value* x = a.Find(key);
    return x && x->is_string() ? x->as_string() : "-";
  };
  struct Line {
    std::string label, value;
  };
  std::vector<Line> lines = {
      {"Shards completed", num("completed_shards", "") + " / " + num("total_shards", "")},
      {"Rows processed", num("total_rows_processed", "")},
      {"Rows failed", num("total_failed_rows", "")},
      {"Wall clock", text("wall_clock_runtime_human")},
      {"Sum of shard runtimes", text("sum_shard_runtime_human")},
      {"Shortest / longest shard", text("min_shard_runtime_human") + " / " + text("max_shard_runtime_human")},
      {"Throughput (wall clock)", num("overall_throughput_rows_per_sec", "rows/s")},
      {"Model load (sum)", num("sum_model_load_seconds", "s")},
      {"Inference time (sum)", num("sum_inference_runtime_seconds", "s")},
      {"Input tokens", num("total_input_tokens", "")},
      {"Output tokens", num("total_output_tokens", "")},
      {"Output tokens/s", num("total_tokens_per_sec", "tok/s")},
      {"GPUs per shard", num("num_gpus", "")},
      {"Tokens/s per GPU", num("tokens_per_sec_per_gpu", "tok/s")},
      {"GPU-days per 1e9 tokens", num("gpu_days_per_billion_tokens", "")},
      {"Mean GPU utilisation", num("mean_gpu_util_pct", "%")},
      {"Mean CPU utilisation", num("mean_cpu_util_pct", "% of a core")},
  };
  if (a.Find("total_cost")) lines.push_back({"Cost (batch prices)", num("total_cost", "")});
  if (a.Find("total_cost_usd")) lines.push_back({"Cost (hosted API prices)", num("total_cost_usd", "USD")});
  size_t width = 0;
  for (const auto& l : lines) width = std::max(width, l.label.size());
  std::string out;
  for (const auto& l : lines) out += l.label + std::string(width - l.label.size() + 2, ' ') + l.value + "\n";
  return out;
}

}  // namespace mmirage
