// `mmirage estimate`: tokens, wall time, GPU time and cost of a run, from a sample (exec/estimate.h).
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/cache_commands.h"
#include "data/json.h"
#include "exec/estimate.h"
#include "stats/shard_stats.h"

namespace mmirage::cli {
namespace {

struct Opts {
  CommonOptions common;
  int64_t sample = 64;
  std::string format = "table";
  bool no_generate = false;
  std::string generate_via;
};

std::string Count(double x) {
  char buf[64];
  if (x >= 1e9) std::snprintf(buf, sizeof buf, "%.2fB", x / 1e9);
  else if (x >= 1e6) std::snprintf(buf, sizeof buf, "%.2fM", x / 1e6);
  else if (x >= 1e4) std::snprintf(buf, sizeof buf, "%.1fk", x / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f", x);
  return buf;
}

std::string Range(const std::optional<Interval>& i, std::string (*fmt)(double)) {
  if (!i) return "unknown";
  return fmt(i->estimate) + "  (90%: " + fmt(i->low) + " – " + fmt(i->high) + ")";
}

std::string Money(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "$%.2f", x);
  return buf;
}

std::string Duration(double s) { return HumanDuration(RoundTo(s, 1)); }

void PrintTable(const exec::EstimateReport& r) {
  std::cout << "rows              " << r.rows_total << (r.rows_total_exact ? "" : " (estimated)") << ", sample "
            << r.sample_rows << "\n"
            << "input tokens      " << Range(r.input_tokens, Count) << "\n"
            << "output tokens     " << Range(r.output_tokens, Count) << (r.output_tokens_bound ? "  [upper bound]" : "")
            << "\n"
            << "wall time         " << Range(r.wall_seconds, Duration) << "  (" << r.num_shards << " shard(s), "
            << r.concurrency << " at a time)\n"
            << "per shard         " << Range(r.wall_seconds_per_shard, Duration) << "\n";
  if (r.gpu_hours) std::cout << "GPU hours         " << FormatDouble(RoundTo(*r.gpu_hours, 3)) << "\n";
  if (r.gpu_days_per_billion_tokens)
    std::cout << "GPU-days / 1B tok " << FormatDouble(RoundTo(*r.gpu_days_per_billion_tokens, 2)) << "\n";
  std::cout << "cost              " << (r.cost_usd ? Range(r.cost_usd, Money) : "n/a (no prices in the config)");
  if (r.batch_cost_usd) std::cout << "  (" << Range(r.batch_cost_usd, Money) << " with the " << r.batch_api << ")";
  std::cout << "\n";
  if (r.rows_per_sec)
    std::cout << "measured          " << FormatDouble(RoundTo(*r.rows_per_sec, 2)) << " rows/s"
              << (r.output_tokens_per_sec ? ", " + FormatDouble(RoundTo(*r.output_tokens_per_sec, 1)) + " tok/s" : "")
              << ", " << r.sample_failed_rows << " failed sample row(s)\n";
  for (const auto& o : r.outputs)
    std::cout << "output " << o.name << ": " << (o.cached ? "cached" : "not cached") << " (" << o.reason << ")\n";
  std::cout << "assumptions:\n";
  for (const auto& a : r.assumptions) std::cout << "  - " << a << "\n";
}

int Estimate(const Opts& o) {
  if (!ApplyLogLevel(o.common)) return kExitUsage;
  auto config = LoadConfigOrReport(o.common.config_path);
  if (!config) return kExitFailure;
  exec::EstimateOptions eo;
  eo.config = &*config;
  eo.sample_rows = o.sample;
  eo.generate = !o.no_generate;
  eo.generate_via = o.generate_via;
  auto r = exec::RunEstimate(eo);
  if (!r.ok()) {
    ReportError(r.status());
    return kExitFailure;
  }
  if (o.format == "json") std::cout << ToJson(r->ToValue()) << "\n";
  else PrintTable(*r);
  return kExitOk;
}

}  // namespace

Runner RegisterEstimate(CLI::App* app) {
  auto o = std::make_shared<Opts>();
  auto* cmd = app->add_subcommand("estimate", "Tokens, wall time, GPU time and cost of a run, from a sample");
  AddCommonOptions(cmd, &o->common);
  cmd->add_option("--sample", o->sample, "Rows to sample (default 64; at least one per dataset/split/shard)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--format", o->format, "table | json")->check(CLI::IsMember({"table", "json"}));
  cmd->add_flag("--no-generate", o->no_generate, "Count prompt tokens only; run nothing");
  cmd->add_option("--generate-via", o->generate_via,
                  "Base URL of a synchronous OpenAI-compatible endpoint to measure batch_api / paid outputs on");
  return [o]() { return Estimate(*o); };
}

}  // namespace mmirage::cli
