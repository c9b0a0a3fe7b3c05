// `mmirage stats`: the benchmark report of a run from the state directory, as JSON
// (2-space indent), as a human table with the tuning advice (stats/advice.h), or as a self-contained HTML page
// (stats/report_html.h; `--html FILE` writes it to a file, `--format html` to stdout). Exit 0 unless the config
// fails to load or the HTML file cannot be written.
#include <iostream>
#include <memory>

#include "cli/shard_commands.h"
#include "data/json.h"
#include "state/shard_state.h"
#include "stats/advice.h"
#include "stats/aggregate.h"
#include "stats/report_data.h"
#include "stats/report_html.h"
#include "util/log.h"

namespace mmirage::cli {
namespace {

struct StatsOptions {
  CommonOptions common;
  std::string format = "json";
  bool format_given = false;
  std::string html_path;  // --html FILE
};

// What the advice names from the config: batch_size, and the first llm processor's max_running_requests and
// max_new_tokens.
TuningKnobs KnobsOf(const config::Config& c) {
  TuningKnobs k;
  k.batch_size = c.loading.batch_size;
  for (const auto& p : c.processors) {
    if (p.type != "llm") continue;
    const Value* m =
        p.llm.extra_engine_args.is_object() ? p.llm.extra_engine_args.Find("max_running_requests") : nullptr;
    if (m && m->is_int()) k.max_running_requests = m->as_int();
    const Value* t =
        p.llm.default_sampling_params.is_object() ? p.llm.default_sampling_params.Find("max_new_tokens") : nullptr;
    if (t && t->is_int()) k.max_new_tokens = t->as_int();
    break;
  }
  return k;
}

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
  RunReport run;
  bool want_report = o.format == "table" || o.format == "html" || !o.html_path.empty();
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
    // Derived values are recomputed from the stored base values.
    entry.Set("stats", in.stats ? in.stats->ToValue() : Value());
    if (r.status == ShardStatus::kMissing || r.status == ShardStatus::kUnknown) entry.Set("datasets", Value());
    per_shard.Push(std::move(entry));
    if (want_report) {
      ShardReport sr;
      sr.shard_id = id;
      sr.record = r;
      sr.stats = in.stats;
      LoadShardDetails(env, config->loading.state_dir, &sr);
      run.shards.push_back(std::move(sr));
    }
    inputs.push_back(std::move(in));
  }
  Value aggregate = AggregateStats(inputs, config->loading.num_shards);
  std::vector<Advice> advice;
  if (want_report) {
    run.config_path = o.common.config_path;
    run.num_shards = config->loading.num_shards;
    run.generated_at = static_cast<double>(env->NowMicros()) / 1e6;
    run.per_shard = per_shard;
    run.aggregate = aggregate;
    run.knobs = KnobsOf(*config);
    run.tuned_by = config->tuned_by.value_or("");
    for (const auto& sh : run.shards)  // the sample period the shards recorded (gaps are judged against it)
      for (const auto& e : sh.timeline)
        if (e.event == "start" && e.interval) run.timeline_interval_seconds = *e.interval;
    advice = ComputeAdvice(run);
  }
  if (!o.html_path.empty()) {
    Status w = WriteFileAtomically(env, o.html_path, RenderHtmlReport(run, advice));
    if (!w.ok()) {
      LOG_ERROR("cannot write the HTML report: " << w.message());
      return kExitFailure;
    }
    LOG_INFO("HTML report written to " << o.html_path);
    if (!o.format_given) return kExitOk;
  }
  if (o.format == "html") {
    std::cout << RenderHtmlReport(run, advice);
  } else if (o.format == "table") {
    if (config->tuned_by) std::cout << "tuned config: " << *config->tuned_by << "\n";
    std::cout << PerShardTable(per_shard) << "\n"
              << FormatAggregateTable(aggregate) << "\n"
              << FormatAdviceText(advice);
  } else {
    Value report = Value::EmptyObject();
    report.Set("per_shard", std::move(per_shard));
    report.Set("aggregate", std::move(aggregate));
    if (config->tuned_by) report.Set("tuned_by", *config->tuned_by);
    std::cout << ToJsonPretty(report, 2) << "\n";
  }
  return kExitOk;
}

}  // namespace

Runner RegisterStats(CLI::App* app) {
  auto o = std::make_shared<StatsOptions>();
  auto* cmd = app->add_subcommand("stats", "Benchmark report of a run (per shard and aggregate)");
  AddCommonOptions(cmd, &o->common);
  auto* fmt = cmd->add_option("--format", o->format, "json (default), table (with tuning advice) or html (to stdout)")
                  ->transform(CLI::IsMember({"json", "table", "html"}, CLI::ignore_case));
  cmd->add_option("--html", o->html_path,
                  "also write the report as one self-contained HTML file (charts, advice) to FILE")
      ->type_name("FILE");
  return [o, fmt]() {
    o->format_given = fmt->count() > 0;
    return Stats(*o);
  };
}

}  // namespace mmirage::cli
