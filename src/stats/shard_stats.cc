#include "stats/shard_stats.h"

#include <cmath>
#include <cstdio>
#include <vector>

namespace mmirage {
namespace {

Value OptD(const std::optional<double>& d) { return d ? Value(*d) : Value(); }
Value OptI(const std::optional<int64_t>& i) { return i ? Value(*i) : Value(); }

std::optional<double> GetD(const Value& v, const char* k) {
  const Value* x = v.Find(k);
  if (x && x->is_number()) return x->as_number();
  return std::nullopt;
}
std::optional<int64_t> GetI(const Value& v, const char* k) {
  const Value* x = v.Find(k);
  if (x && x->is_int()) return x->as_int();
  if (x && x->is_double() && std::isfinite(x->as_double())) return static_cast<int64_t>(x->as_double());
  return std::nullopt;
}

}  // namespace

double RoundTo(double x, int ndigits) {
  double scale = std::pow(10.0, ndigits);
  double r = std::nearbyint(x * scale) / scale;  // banker's rounding like Python on ties
  return r;
}

std::optional<double> ShardStats::InferenceRuntime() const {
  if (!runtime_seconds) return std::nullopt;
  if (!model_load_seconds) return *runtime_seconds;
  return std::max(0.0, *runtime_seconds - *model_load_seconds);
}

Value ShardStats::ToValue() const {
  Value v = Value::EmptyObject();
  auto inf = InferenceRuntime();
  v.Set("runtime_seconds", OptD(runtime_seconds));
  v.Set("runtime_human", runtime_seconds ? Value(HumanDuration(*runtime_seconds)) : Value());
  v.Set("model_load_seconds", OptD(model_load_seconds));
  v.Set("inference_runtime_seconds", inf ? Value(RoundTo(*inf, 3)) : Value());
  v.Set("rows_processed", rows_processed);
  v.Set("throughput_rows_per_sec", OptD(throughput_rows_per_sec));
  v.Set("gpu_util_mean", OptD(gpu_util_mean));
  v.Set("gpu_util_min", OptD(gpu_util_min));
  v.Set("gpu_util_max", OptD(gpu_util_max));
  v.Set("gpu_util_samples", gpu_util_samples);
  v.Set("input_tokens", OptI(input_tokens));
  v.Set("output_tokens", OptI(output_tokens));
  v.Set("num_gpus", OptI(num_gpus));
  bool rate = output_tokens && *output_tokens > 0 && inf && *inf > 0 && num_gpus && *num_gpus > 0;
  v.Set("tokens_per_sec_per_gpu",
        rate ? Value(RoundTo(static_cast<double>(*output_tokens) / (*inf * static_cast<double>(*num_gpus)), 2))
             : Value());
  v.Set("gpu_days_per_billion_tokens",
        rate ? Value(RoundTo(
                   (static_cast<double>(*num_gpus) * *inf / 86400.0) / (static_cast<double>(*output_tokens) / 1e9), 4))
             : Value());
  v.Set("prompt_tokens_reused", OptI(prompt_tokens_reused));
  if (images_encoded || images_reused) {
    v.Set("images_encoded", OptI(images_encoded));
    v.Set("images_reused", OptI(images_reused));
  }
  bool total_rate = output_tokens && *output_tokens > 0 && inf && *inf > 0;
  v.Set("tokens_per_sec", total_rate ? Value(RoundTo(static_cast<double>(*output_tokens) / *inf, 2)) : Value());
  v.Set("cpu_util_mean", OptD(cpu_util_mean));
  v.Set("machine_cpu_util_mean", OptD(machine_cpu_util_mean));
  if (cost) v.Set("cost", *cost);
  if (cost_usd) v.Set("cost_usd", *cost_usd);
  if (cached_generations) v.Set("cached_generations", *cached_generations);
  if (cached_output_tokens) v.Set("cached_output_tokens", *cached_output_tokens);
  if (replicas) {
    v.Set("replicas", *replicas);
    v.Set("replica_restarts", OptI(replica_restarts));
    v.Set("replica_output_tokens", replica_output_tokens);
  }
  return v;
}

ShardStats ShardStats::FromValue(const Value& v) {
  ShardStats s;
  if (!v.is_object()) return s;
  s.runtime_seconds = GetD(v, "runtime_seconds");
  s.rows_processed = GetI(v, "rows_processed").value_or(0);
  s.gpu_util_mean = GetD(v, "gpu_util_mean");
  s.gpu_util_min = GetD(v, "gpu_util_min");
  s.gpu_util_max = GetD(v, "gpu_util_max");
  s.gpu_util_samples = GetI(v, "gpu_util_samples").value_or(0);
  s.cached_generations = GetI(v, "cached_generations");
  s.cached_output_tokens = GetI(v, "cached_output_tokens");
  s.replicas = GetI(v, "replicas");
  s.replica_restarts = GetI(v, "replica_restarts");
  if (const Value* t = v.Find("replica_output_tokens"); t != nullptr && t->is_array()) s.replica_output_tokens = *t;
  s.input_tokens = GetI(v, "input_tokens");
  s.output_tokens = GetI(v, "output_tokens");
  s.num_gpus = GetI(v, "num_gpus");
  s.model_load_seconds = GetD(v, "model_load_seconds");
  s.throughput_rows_per_sec = GetD(v, "throughput_rows_per_sec");
  s.prompt_tokens_reused = GetI(v, "prompt_tokens_reused");
  s.images_encoded = GetI(v, "images_encoded");
  s.images_reused = GetI(v, "images_reused");
  s.cpu_util_mean = GetD(v, "cpu_util_mean");
  s.machine_cpu_util_mean = GetD(v, "machine_cpu_util_mean");
  s.cost = GetD(v, "cost");
  s.cost_usd = GetD(v, "cost_usd");
  return s;
}

std::string HumanDuration(double seconds) {
  struct Unit {
    const char* singular;
    const char* plural;
    double size;
  };
  static const Unit kUnits[] = {{"year", "years", 365 * 86400.0},
                                {"month", "months", 30.5 * 86400.0},
                                {"day", "days", 86400.0},
                                {"hour", "hours", 3600.0},
                                {"minute", "minutes", 60.0}};
  // Round the seconds part to 2 decimals first so that 59.999 s carries over to 1 minute.
  double total = std::round(seconds * 100.0) / 100.0;
  std::vector<std::string> parts;
  for (const Unit& u : kUnits) {
    double count = std::floor(total / u.size + 1e-9);
    if (count >= 1) {
      total -= count * u.size;
      long long c = static_cast<long long>(count);
      parts.push_back(std::to_string(c) + " " + (c == 1 ? u.singular : u.plural));
    }
  }
  total = std::round(total * 100.0) / 100.0;
  if (total > 0 || parts.empty()) {
    char buf[64];
    if (total == std::floor(total)) {
      long long s = static_cast<long long>(total);
      std::snprintf(buf, sizeof buf, "%lld %s", s, s == 1 ? "second" : "seconds");
    } else {
      std::snprintf(buf, sizeof buf, "%0.2f seconds", total);
    }
    parts.emplace_back(buf);
  }
  if (parts.size() == 1) return parts[0];
  std::string out;
  for (size_t i = 0; i + 1 < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out + " and " + parts.back();
}

}  // namespace mmirage
