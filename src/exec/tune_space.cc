#include "exec/tune_space.h"

#include <algorithm>
#include <set>

#include "process/llm/llm_options.h"

namespace mmirage::exec {
namespace {

std::optional<int64_t> IntIn(const Value& map, const char* key) {
  const Value* v = map.is_object() ? map.Find(key) : nullptr;
  if (v == nullptr || !v->is_int()) return std::nullopt;
  return v->as_int();
}

// Integer candidates around `current`, multiplied by `factors`, within [lo, hi], without `current`.
std::vector<Value> Scaled(int64_t current, std::initializer_list<double> factors, int64_t lo, int64_t hi) {
  std::vector<Value> out;
  std::set<int64_t> seen{current};
  for (double f : factors) {
    int64_t v = std::clamp<int64_t>(static_cast<int64_t>(static_cast<double>(current) * f), lo, hi);
    if (seen.insert(v).second) out.emplace_back(v);
  }
  return out;
}

std::vector<Value> Others(const std::string& current, std::initializer_list<const char*> all) {
  std::vector<Value> out;
  for (const char* s : all)
    if (current != s) out.emplace_back(std::string(s));
  return out;
}

// The extra_engine_args key that holds the parallel sequences: the one the config uses, else `fallback`.
std::string SlotsKey(const Value& extra, const char* fallback) {
  for (const char* k : {"max_running_requests", "n_parallel"})
    if (extra.is_object() && extra.Find(k) != nullptr) return k;
  return fallback;
}

// A share of GPU memory in (0, 1]: the config's value (else the engine's default) and `others`.
TuneKnob FractionKnob(const Value& extra, const char* key, double fallback, std::initializer_list<double> others) {
  const Value* v = extra.is_object() ? extra.Find(key) : nullptr;
  double cur = v == nullptr     ? fallback
               : v->is_int()    ? static_cast<double>(v->as_int())
               : v->is_number() ? v->as_double()
                                : fallback;
  std::vector<Value> out;
  for (double f : others)
    if (f != cur) out.emplace_back(f);
  return TuneKnob{key, Value(cur), out, false};
}

TuneKnob OrderKnob(const config::Config& c) {
  return TuneKnob{"order", Value(c.processing.order), Others(c.processing.order, {"input", "prefix"}), false};
}

std::vector<TuneKnob> LlamaKnobs(const config::Processor& p, const config::Config& c, int usable_cpus) {
  engine::LlamaEngineOptions o;
  if (auto m = process::llm::MapEngineOptions(p); m.ok()) o = m->options;
  std::vector<TuneKnob> k;
  k.push_back({SlotsKey(p.llm.extra_engine_args, "n_parallel"), Value(int64_t{o.n_parallel}),
               Scaled(o.n_parallel, {0.5, 2, 4}, 1, 64), true});
  k.push_back(OrderKnob(c));
  k.push_back({"n_ubatch", Value(int64_t{o.n_ubatch}), Scaled(o.n_ubatch, {0.5, 2}, 64, 4096), false});
  k.push_back({"n_batch", Value(int64_t{o.n_batch}), Scaled(o.n_batch, {0.5, 2}, 256, 8192), false});
  k.push_back({"flash_attn", Value(o.flash_attn), Others(o.flash_attn, {"on", "off"}), false});
  k.push_back({"kv_cache_dtype", Value(o.cache_type_k), Others(o.cache_type_k, {"f16", "q8_0"}), false});
  if (usable_cpus > 1) {
    std::vector<Value> threads;
    for (int t : {usable_cpus / 2, usable_cpus})
      if (t != o.n_threads && t > 0) threads.emplace_back(int64_t{t});
    k.push_back({"n_threads", Value(int64_t{o.n_threads}), threads, false});
  }
  return k;
}

}  // namespace

std::vector<TuneKnob> TuneKnobs(const config::Processor& p, const config::Config& c, int usable_cpus) {
  const std::string& backend = p.llm.backend;
  const Value& extra = p.llm.extra_engine_args;
  if (backend == "llama") return LlamaKnobs(p, c, usable_cpus);
  std::vector<TuneKnob> k;
  if (backend == "openai") {
    int64_t cur = p.llm.endpoint && p.llm.endpoint->max_concurrency ? *p.llm.endpoint->max_concurrency
                                                                    : IntIn(extra, "max_running_requests").value_or(64);
    k.push_back({"max_concurrency", Value(cur), Scaled(cur, {0.5, 2, 4}, 1, 1024), true});
    k.push_back(OrderKnob(c));
    return k;
  }
  if (backend == "llama-server") {
    std::string slots_key = SlotsKey(extra, "max_running_requests");
    int64_t slots = IntIn(extra, slots_key.c_str()).value_or(8);
    k.push_back({slots_key, Value(slots), Scaled(slots, {0.5, 2, 4}, 1, 256), true});
    k.push_back(OrderKnob(c));
    int64_t ub = IntIn(extra, "n_ubatch").value_or(512), b = IntIn(extra, "n_batch").value_or(2048);
    k.push_back({"n_ubatch", Value(ub), Scaled(ub, {0.5, 2}, 64, 4096), false});
    k.push_back({"n_batch", Value(b), Scaled(b, {0.5, 2}, 256, 8192), false});
    return k;
  }
  // sglang | vllm: the server's own scheduler knobs, passed on its command line (vllm: max_running_requests is
  // --max-num-seqs; its prefill chunk is --max-num-batched-tokens and its memory share --gpu-memory-utilization).
  const bool vllm = backend == "vllm";
  int64_t running = IntIn(extra, "max_running_requests").value_or(vllm ? 256 : 128);
  k.push_back({"max_running_requests", Value(running), Scaled(running, {0.5, 2, 4}, 1, 4096), true});
  k.push_back(OrderKnob(c));
  const char* chunk_key = vllm ? "max_num_batched_tokens" : "chunked_prefill_size";
  int64_t chunk = IntIn(extra, chunk_key).value_or(vllm ? 2048 : 8192);
  k.push_back({chunk_key, Value(chunk), Scaled(chunk, {0.5, 2}, 512, 65536), false});
  k.push_back(vllm ? FractionKnob(extra, "gpu_memory_utilization", 0.9, {0.8, 0.95})
                   : FractionKnob(extra, "mem_fraction_static", 0.88, {0.8, 0.92}));
  return k;
}

std::vector<Value> RefineCandidates(const Value& best, const std::vector<Value>& tried) {
  if (!best.is_int()) return {};
  std::set<int64_t> seen;
  for (const Value& v : tried)
    if (v.is_int()) seen.insert(v.as_int());
  int64_t b = best.as_int();
  seen.insert(b);
  std::vector<Value> out;
  auto it = seen.find(b);
  if (it != seen.begin()) {
    int64_t mid = (*std::prev(it) + b) / 2;
    if (!seen.count(mid)) out.emplace_back(mid);
  }
  if (std::next(it) != seen.end()) {
    int64_t mid = (b + *std::next(it)) / 2;
    if (!seen.count(mid)) out.emplace_back(mid);
  }
  return out;
}

}  // namespace mmirage::exec
