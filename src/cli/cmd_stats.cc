// `mmirage stats`: the benchmark report of a run (cli.md §4, stats.md §2) from the state directory, as JSON
// (2-space indent) or as a human table. Exit 0 unless the config fails to load.
#include <iostream>
#include <memory>

#include "cli/shard_commands.h"
#include "data/json.h"
#include "state/shard_state.h"
#include "stats/aggregate.h"

namespace mmirage::cli {
namespace {

struct StatsOptions {
  CommonOptions common;
  std::string format = "json";
};

std::optional<double> ParseTime(const std::optional<std::string>& s) {
  return s ? ParseLocalIsoTime(*s) : std::nullopt;
}

std::string Num(const Value* v, const char* unit = "") {
  if (v == nullptr || v->is_null()) return "-";
  std::string s = v->is_int() ? std::to_string(v->as_int()) : FormatDouble(v->as_number());
  return unit[0] ? s + unit : s;
}

std::string PerShardTable(const Value& per_shard) {
  std::string out = "shard  status     rows        runtime      rows/s     output tok/s\n";
  for (const Value& e : per_shard.as_array()) {
    const Value* st = e.Find("stats");
    bool has = st && st->is_object();
    char line[256];
    std::snprintf(line, sizeof line, "%-5s  %-9s  %-10s  %-11s  %-9s  %s\n", Num(e.Find("shard_id")).c_str(),
                  e.Find("status")->as_string().c_str(), has ? Num(st->Find("rows_processed")).c_str() : "-",
                  has ? Num(st->Find("runtime_seconds"), " s").c_str() : "-",
                  has ? Num(st->Find("throughput_rows_per_sec")).c_str() : "-",
                  has ? Num(st->Find("tokens_per_sec")).c_str() : "-");
    out += line;
  }
  return out;
}

int Stats(const StatsOptions& o) {
  if (!ApplyLogLevel(o.common)) return kExitUsage;
  auto config = LoadConfigOrReport(o.common.config_path);
  if (!config) return kExitFailure;
  Env* env = Env::Default();
  Value per_shard = Value::EmptyArray();
  std::vector<ShardStatsInput> inputs;
  for (int64_t id = 0; id < config->loading.num_shards; ++id) {
    ShardRecord r = ShardState(env, config->loading.state_dir, id).Read();
    r.shard_id = id;
    ShardStatsInput in;
    in.shard_id = id;
    in.status = r.status;
    in.started_at_seconds = ParseTime(r.started_at);
    in.finished_at_seconds = ParseTime(r.finished_at);
    in.failed_rows = r.failed_rows;
    if (r.stats.is_object()) in.stats = ShardStats::FromValue(r.stats);
    Value entry = r.ToValue();
    // Derived values are recomputed from the stored base values (stats.md §1.3).
    entry.Set("stats", in.stats ? in.stats->ToValue() : Value());
    if (r.status == "missing" || r.status == "unknown") entry.Set("datasets", Value());
    per_shard.Push(std::move(entry));
    inputs.push_back(std::move(in));
  }
  Value aggregate = AggregateStats(inputs, config->loading.num_shards);
  if (o.format == "table") {
    std::cout << PerShardTable(per_shard) << "\n" << FormatAggregateTable(aggregate);
  } else {
    Value report = Value::EmptyObject();
    report.Set("per_shard", std::move(per_shard));
    report.Set("aggregate", std::move(aggregate));
    std::cout << ToJsonPretty(report, 2) << "\n";
  }
  return kExitOk;
}

}  // namespace

Runner RegisterStats(CLI::App* app) {
  auto o = std::make_shared<StatsOptions>();
  auto* cmd = app->add_subcommand("stats", "Benchmark report of a run (per shard and aggregate)");
  AddCommonOptions(cmd, &o->common);
  cmd->add_option("--format", o->format, "json (default) or table")
      ->check(CLI::IsMember({"json", "table"}, CLI::ignore_case));
  return [o]() { return Stats(*o); };
}

}  // namespace mmirage::cli
