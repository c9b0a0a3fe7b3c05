// `mmirage tune`: timed trials of engine settings on a sample of the real rows (exec/tune.h); --write a tuned copy.
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>

#include "cli/common.h"
#include "config/tuned_yaml.h"
#include "data/json.h"
#include "exec/tune.h"
#include "util/env.h"

namespace mmirage::cli {
namespace {

struct Opts {
  CommonOptions common;
  double budget_seconds = 300;
  int64_t sample = 32;
  std::string write;
  std::string format = "table";
};

std::string Fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

void PrintTable(const exec::TuneReport& r) {
  std::printf("tuning the %s processor (backend %s) on %lld sampled rows: %s s of a %s s budget\n", r.processor.c_str(),
              r.backend.c_str(), static_cast<long long>(r.sample_rows), Fixed(r.elapsed_seconds, 1).c_str(),
              Fixed(r.budget_seconds, 0).c_str());
  std::printf("%-44s %12s %9s %9s  %s\n", "setting", "out tok/s", "rows/s", "p95 s", "status");
  for (size_t i = 0; i < r.trials.size(); ++i) {
    const exec::TuneTrial& t = r.trials[i];
    std::string status = t.ok ? (i == r.best ? "ok  <- best" : "ok") : "FAILED: " + t.error;
    std::printf("%-44s %12s %9s %9s  %s\n", t.Label().c_str(), Fixed(t.output_tokens_per_sec, 1).c_str(),
                Fixed(t.rows_per_sec, 2).c_str(), Fixed(t.p95_latency_seconds, 2).c_str(), status.c_str());
  }
  const exec::TuneTrial& b = r.Best();
  if (r.best == 0) std::printf("best: the config's own settings (no trial beat them by more than 3%%)\n");
  else std::printf("best: %s: %sx output tok/s over the config's own\n", b.Label().c_str(), Fixed(r.gain, 2).c_str());
  if (r.gpu_days_per_billion_tokens)
    std::printf("projected: %s %s-days per billion output tokens\n", Fixed(*r.gpu_days_per_billion_tokens, 2).c_str(),
                r.num_gpus > 0 ? "GPU" : "device");
  if (r.prefix_gain)
    std::printf("order prefix vs input: %sx rows/s on this dataset\n", Fixed(*r.prefix_gain, 2).c_str());
  for (const auto& n : r.notes) std::printf("note: %s\n", n.c_str());
}

// The YAML path of a tuned key of processor `proc`.
std::vector<std::string> YamlPath(const std::string& key, size_t proc) {
  std::string p = "[" + std::to_string(proc) + "]";
  if (key == "order") return {"processing_params", "order"};
  if (key == "max_concurrency") return {"processors", p, "endpoint", "max_concurrency"};
  return {"processors", p, "server_args", "extra_engine_args", key};
}

std::string UtcNow() {
  std::time_t t = static_cast<std::time_t>(Env::Default()->NowMicros() / 1000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%MZ", &tm);
  return buf;
}

Status WriteTuned(const Opts& o, const config::Config& c, const exec::TuneReport& r) {
  size_t proc = 0;
  for (size_t i = 0; i < c.processors.size(); ++i)
    if (c.FindProcessor("llm") == &c.processors[i]) proc = i;
  const exec::TuneTrial& b = r.Best();
  std::vector<config::YamlEdit> edits;
  for (const auto& s : b.changes) {
    std::string was = "unset";
    for (const auto& k : r.own)
      if (k.key == s.key) was = k.value.is_string() ? k.value.as_string() : ToJson(k.value);
    std::string v = s.value.is_string() ? s.value.as_string() : ToJson(s.value);
    edits.push_back({YamlPath(s.key, proc), v, "tuned by mmirage tune (was " + was + ")"});
  }
  std::string marker = "mmirage tune " + UtcNow() + ": " +
                       (b.changes.empty() ? "config's own settings kept" : b.Label()) + ", " + Fixed(r.gain, 2) +
                       "x output tok/s on " + std::to_string(r.sample_rows) + " sample rows";
  MMIRAGE_ASSIGN_OR_RETURN(std::string text, Env::Default()->ReadFileToString(o.common.config_path));
  std::string header = "Tuned copy of " + o.common.config_path + " written by `mmirage tune`; the tuned keys carry a " +
                       "comment.\nComments of the original are not kept.";
  MMIRAGE_ASSIGN_OR_RETURN(std::string out,
                           config::RewriteTunedYaml(text, o.common.config_path, edits, marker, header));
  return WriteFileAtomically(Env::Default(), o.write, out);
}

int Tune(const Opts& o) {
  if (!ApplyLogLevel(o.common)) return kExitUsage;
  auto config = LoadConfigOrReport(o.common.config_path);
  if (!config) return kExitFailure;
  exec::TuneOptions to;
  to.config = &*config;
  to.budget_seconds = o.budget_seconds;
  to.sample_rows = o.sample;
  auto r = exec::RunTune(to);
  if (!r.ok()) {
    ReportError(r.status());
    return kExitFailure;
  }
  if (!o.write.empty()) {
    Status w = WriteTuned(o, *config, *r);
    if (!w.ok()) {
      ReportError(w);
      return kExitFailure;
    }
  }
  if (o.format == "json") std::cout << ToJson(r->ToValue()) << "\n";
  else PrintTable(*r);
  return kExitOk;
}

}  // namespace

Runner RegisterTune(CLI::App* app) {
  auto o = std::make_shared<Opts>();
  auto* cmd = app->add_subcommand("tune", "Measure engine settings on a sample of the rows and pick the fastest");
  AddCommonOptions(cmd, &o->common);
  cmd->add_option("--budget-seconds", o->budget_seconds, "Wall time for all trials (default 300)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--sample", o->sample, "Rows to sample, stratified by prompt length (default 32)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--write", o->write, "Write a tuned copy of the config here (changed keys annotated)");
  cmd->add_option("--format", o->format, "table | json")->check(CLI::IsMember({"table", "json"}));
  return [o]() { return Tune(*o); };
}

}  // namespace mmirage::cli
