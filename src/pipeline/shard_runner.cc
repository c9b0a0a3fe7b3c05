#include "pipeline/shard_runner.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "data/dataset.h"
#include "data/json.h"
#include "data/line_reader.h"
#include "data/output_reader.h"
#include "data/hf_writer.h"
#include "pipeline/cost_budget.h"
#include "pipeline/failure_report.h"
#include "pipeline/input_identity.h"
#include "pipeline/row_batches.h"
#include "pipeline/stream_scheduler.h"
#include "process/cache_key.h"
#include "pipeline/timeline_recorder.h"
#include "process/llm/engine_factory.h"
#include "process/llm/model_ref.h"
#include "process/llm/pricing.h"
#include "pipeline/row_transform.h"
#include "pipeline/shard_writer.h"
#include "state/heartbeat.h"
#include "state/progress_writer.h"
#include "state/shard_state.h"
#include "stats/shard_stats.h"
#include "stats/utilization.h"
#include "util/log.h"
#include "util/signals.h"

namespace mmirage::pipeline {
namespace {

// The price of the shard's generations when its one llm processor is a hosted API with a known price; nullopt
// otherwise (with `say_unknown`, one line saying so for a hosted model of unknown price).
std::optional<config::EndpointConfig::Pricing> HostedPricing(const config::Config& config, bool say_unknown) {
  const config::Processor* llm = nullptr;
  for (const auto& p : config.processors) {
    if (p.type != "llm") continue;
    if (llm != nullptr) return std::nullopt;  // tokens are not counted per processor
    llm = &p;
  }
  if (llm == nullptr || (llm->llm.backend != "openai" && llm->llm.backend != "anthropic")) return std::nullopt;
  auto pricing = process::llm::PricingFor(*llm);
  if (!pricing && say_unknown) {
    LOG_INFO("cost: no price known for model '" << (llm->llm.endpoint ? llm->llm.endpoint->model : "")
                                                << "'; set endpoint.pricing to see it");
  }
  return pricing;
}

// USD so far; generation-cache answers cost nothing and are not counted.
double TotalsCostUsd(const config::EndpointConfig::Pricing& pricing, const StreamTotals& t) {
  return process::llm::CostUsd(pricing, t.prompt_tokens - t.cached_prompt_tokens, t.engine_cached_prompt_tokens,
                               t.completion_tokens - t.cached_completion_tokens);
}

struct DatasetPlan {
  const config::DatasetConfig* config;
  std::vector<DatasetPart> parts;
  std::vector<RowRange> ranges;
};

Result<DatasetPlan> PlanDataset(Env* env, const config::DatasetConfig& dc, int64_t num_shards, int64_t shard_id) {
  DatasetPlan plan;
  plan.config = &dc;
  auto parts = ResolveDatasetParts(env, dc.type, dc.path, dc.splits);
  if (!parts.ok()) return parts.status().WithContext(dc.loc.ToString() + ": dataset");
  plan.parts = std::move(*parts);
  for (const auto& part : plan.parts) {
    if (num_shards == 1) {  // the whole part: no need to count its rows first
      plan.ranges.push_back(RowRange{0, UINT64_MAX});
      continue;
    }
    MMIRAGE_ASSIGN_OR_RETURN(uint64_t n, CountRows(env, part));
    plan.ranges.push_back(ShardRange(n, static_cast<uint64_t>(num_shards), static_cast<uint64_t>(shard_id)));
  }
  return plan;
}

// Live counters of the running shard, read by the progress writer (state/progress_writer.h).
using Progress = ShardProgressCounters;

// RowInfo::sample_index = row_index + this: the row's position among the shard's rows of the dataset (parts in
// order), stable across resumes and retries.
int64_t SampleOffset(const DatasetPlan& plan, size_t part) {
  int64_t before = 0;
  for (size_t i = 0; i < part; ++i) before += static_cast<int64_t>(plan.ranges[i].size());
  return before - static_cast<int64_t>(plan.ranges[part].begin);
}

// The row stages of one dataset, as its output format needs them.
RowTransform DatasetTransform(Env* env, const config::Config& config, const DatasetPlan& plan) {
  RowTransform transform(&config, env, plan.config->image_base_path.value_or(""));
  transform.set_tag_bytes(plan.config->output_format != "jsonl");
  transform.set_cast_images(config.processing.cast_images && plan.config->output_format != "jsonl");
  return transform;
}

// execution_params.max_cost_usd as StreamOptions::may_start_row (pipeline/cost_budget.h): the run's budget, shared
// with the local workers that run at once through the executor's budget directory; a shard of a multi-node run
// (SLURM, Ray: kRateLimitSharesVar) gets budget / the shards that run at once. nullptr without a budget or a price.
std::function<RowGate()> CostGate(Env* env, const config::Config& config, const StreamTotals* t) {
  if (!config.execution.max_cost_usd) return nullptr;
  auto pricing = HostedPricing(config, false);
  if (!pricing) {
    LOG_WARN("execution_params.max_cost_usd is set, but no price is known for the model: no budget applies");
    return nullptr;
  }
  double budget = *config.execution.max_cost_usd;
  config::VarLookup vars = config::ProcessVarLookup();
  std::shared_ptr<SharedCounters> shared;
  if (auto dir = vars(process::llm::kSharedBudgetDirVar); dir && !dir->empty()) {
    shared = NewFileSharedCounters(*dir + "/cost");
  } else if (auto shares = vars(process::llm::kRateLimitSharesVar); shares && std::atoi(shares->c_str()) > 1) {
    budget /= std::atoi(shares->c_str());
  }
  return MakeCostGate(
      budget, [pricing = *pricing, t] { return TotalsCostUsd(pricing, *t); }, t, std::move(shared),
      std::to_string(env->Pid()));
}

}  // namespace

StreamOptions StreamOptionsFor(const config::Config& config, int capacity) {
  // The window bounds rows in flight; batch_size only widens it (it never synchronises).
  StreamOptions so;
  const size_t slots = static_cast<size_t>(std::max(1, capacity));
  so.window = std::max<size_t>(static_cast<size_t>(config.loading.batch_size), 4 * slots);
  so.flush_rows = std::max<size_t>(1, std::min<size_t>(so.window / 2, 64));
  // Prefix order keeps a few more than the slots in flight, so that no slot idles while the scheduler wakes up.
  so.prefix_order = config.processing.order == "prefix";
  so.dispatch_limit = slots + std::max<size_t>(1, slots / 4);
  return so;
}

namespace {

// Runs the rows of `stream` through `transform` into `sink`: in parallel batches when no output calls a model
// (generator null), else through the streaming scheduler. The one place that picks the scheduler and its options,
// so the first pass and a redo of failed rows run alike. kUnavailable "interrupted" after a stop request.
Status RunRows(Env* env, const config::Config& config, RowStream* stream, const RowTransform& transform,
               process::OutputGenerator* generator, int64_t sample_offset,
               const std::function<Status(ProcessedBatch&)>& sink, StreamTotals* totals) {
  if (generator == nullptr) {
    MMIRAGE_TRY(RunRowBatches(stream, transform, RowBatchOptions{}, sink));
    return StopRequested() ? Status::Unavailable("interrupted") : Status::OK();
  }
  StreamOptions so = StreamOptionsFor(config, generator->Capacity());
  so.sample_offset = sample_offset;
  so.may_start_row = CostGate(env, config, totals);
  return RunStreaming(stream, transform, generator, so, sink, totals);
}

// Streams one dataset's shard through the row stages into `writer`, committing every `commit_every_rows` rows or
// `commit_interval_seconds`. Parts resume where the writer's journal says. Returns a fatal error only
// (kUnavailable "interrupted" after a stop request: what is committed stays resumable).
Status ProcessDataset(Env* env, const config::Config& config, const DatasetPlan& plan,
                      process::OutputGenerator* generator, ShardWriter* writer, StreamTotals* totals,
                      Progress* progress) {
  const RowTransform transform = DatasetTransform(env, config, plan);
  const auto& ex = config.execution;
  // Rows that only ran custom functions are bounded by the time-based commit like model-free rows: an fsync every
  // 256 fast function calls would cost more than the calls.
  bool only_custom = true;
  for (const auto& o : config.processing.outputs) only_custom = only_custom && o.type == "custom";
  const int64_t commit_every_rows = ex.commit_every_rows.value_or(only_custom ? 1000000 : 256);
  uint64_t last_commit_us = env->MonotonicMicros();
  int64_t uncommitted = 0;
  for (size_t p = 0; p < plan.parts.size(); ++p) {
    RowRange range = plan.ranges[p];
    range.begin = std::min(range.end, range.begin + writer->resume_rows(p));
    RowStream stream(env, plan.parts[p], range);
    auto sink = [&](ProcessedBatch& batch) -> Status {
      MMIRAGE_TRY(writer->AddSerialized(p, batch.lines, batch.rows));
      for (const auto& f : batch.failures) MMIRAGE_TRY(writer->AddError(p, f.row_index, f.source, f.error));
      for (const auto& w : batch.warnings) MMIRAGE_TRY(writer->AddWarning(p, w.row_index, w.source, w.error));
      MMIRAGE_TRY(writer->AddUsage(batch.usage));
      uint64_t handled = static_cast<uint64_t>(batch.rows) + batch.failures.size();
      writer->Advance(p, handled);
      progress->rows_done += static_cast<int64_t>(handled);
      progress->rows_failed += static_cast<int64_t>(batch.failures.size());
      uncommitted += static_cast<int64_t>(handled);
      uint64_t now = env->MonotonicMicros();
      if (uncommitted >= commit_every_rows ||
          static_cast<double>(now - last_commit_us) >= ex.commit_interval_seconds * 1e6) {
        MMIRAGE_TRY(writer->Commit());
        progress->Committed();  // progress.json now shows the committed rows
        uncommitted = 0;
        last_commit_us = now;
      }
      return Status::OK();
    };
    MMIRAGE_TRY(RunRows(env, config, &stream, transform, generator, SampleOffset(plan, p), sink, totals));
  }
  return Status::OK();
}

// The earlier attempt published this dataset with failed rows: run only those rows again and merge the results
// with the published rows, in input order (rows that fail again stay in errors.jsonl).
Status RedoFailedRows(Env* env, const config::Config& config, const DatasetPlan& plan,
                      process::OutputGenerator* generator, ShardWriter* writer, StreamTotals* totals,
                      Progress* progress, const std::string& published_dir) {
  std::map<std::string, std::vector<uint64_t>> failed;  // split → sorted row indices
  {
    MMIRAGE_ASSIGN_OR_RETURN(auto reader, LineReader::Open(env, JoinPath(published_dir, "errors.jsonl")));
    std::string_view line;
    while (true) {
      MMIRAGE_ASSIGN_OR_RETURN(bool more, reader->Next(&line));
      if (!more) break;
      if (IsBlankLine(line)) continue;
      auto e = ParseJson(line);
      const Value* idx = e.ok() ? e->Find("row_index") : nullptr;
      if (idx == nullptr || !idx->is_int()) return Status::Corruption(published_dir + "/errors.jsonl: bad line");
      if (const Value* level = e->Find("level"); level && level->is_string() && level->as_string() == "warning") {
        MMIRAGE_TRY(writer->AddWarningLine(line));  // a row that was written: kept, not redone
        continue;
      }
      const Value* split = e->Find("split");
      failed[split && split->is_string() ? split->as_string() : ""].push_back(static_cast<uint64_t>(idx->as_int()));
    }
  }
  // The published rows' token usage stays; the redone rows' usage is appended.
  if (auto usage = env->ReadFileToString(JoinPath(published_dir, "usage.jsonl")); usage.ok()) {
    MMIRAGE_TRY(writer->AddUsage(*usage));
  }
  const RowTransform transform = DatasetTransform(env, config, plan);
  for (size_t p = 0; p < plan.parts.size(); ++p) {
    std::vector<uint64_t>& f = failed[plan.parts[p].split];
    std::sort(f.begin(), f.end());
    // (a) The failed rows again.
    std::map<uint64_t, std::string> lines;
    std::map<uint64_t, ProcessedBatch::Failure> fails;
    if (!f.empty()) {
      RowStream stream(env, plan.parts[p], plan.ranges[p]);
      stream.SetIndexFilter(&f);
      size_t pos = 0;
      auto sink = [&](ProcessedBatch& b) -> Status {
        MMIRAGE_TRY(writer->AddUsage(b.usage));
        for (const auto& w : b.warnings) MMIRAGE_TRY(writer->AddWarning(p, w.row_index, w.source, w.error));
        std::set<uint64_t> failed_now;
        for (auto& x : b.failures) {
          failed_now.insert(x.row_index);
          fails[x.row_index] = x;
        }
        size_t line_start = 0;
        size_t k = static_cast<size_t>(b.rows) + b.failures.size();
        for (size_t i = 0; i < k && pos < f.size(); ++i) {
          uint64_t idx = f[pos++];
          if (failed_now.count(idx)) continue;
          size_t nl = b.lines.find('\n', line_start);
          lines[idx] = b.lines.substr(line_start, nl + 1 - line_start);
          line_start = nl + 1;
        }
        return Status::OK();
      };
      MMIRAGE_TRY(RunRows(env, config, &stream, transform, generator, SampleOffset(plan, p), sink, totals));
    }
    // (b) Merge with the published rows, in input order.
    const std::string& split = plan.parts[p].split;
    std::string old_dir = split.empty() ? published_dir : JoinPath(published_dir, split);
    MMIRAGE_ASSIGN_OR_RETURN(auto old, OpenOutputRows(env, old_dir));
    size_t fpos = 0;
    std::string buf;
    for (uint64_t i = plan.ranges[p].begin;; ++i) {
      if (fpos < f.size() && f[fpos] == i) {
        ++fpos;
        if (auto it = lines.find(i); it != lines.end()) {
          MMIRAGE_TRY(writer->AddSerialized(p, it->second, 1));
        } else if (auto jt = fails.find(i); jt != fails.end()) {
          MMIRAGE_TRY(writer->AddError(p, i, jt->second.source, jt->second.error));
          ++progress->rows_failed;
        }
      } else {
        buf.clear();
        MMIRAGE_ASSIGN_OR_RETURN(bool more, old->NextJournalLine(&buf));
        if (!more) break;
        MMIRAGE_TRY(writer->AddSerialized(p, buf, 1));
        ++progress->rows_resumed;  // a kept row of the earlier attempt
      }
      writer->Advance(p, 1);
      ++progress->rows_done;
    }
  }
  return Status::OK();
}

Value DatasetsInfo(const config::Config& config) {
  Value arr = Value::EmptyArray();
  for (const auto& d : config.loading.datasets) {
    Value o = Value::EmptyObject();
    o.Set("image_base_path", d.image_base_path ? Value(*d.image_base_path) : Value());
    o.Set("output_dir", d.output_dir);
    arr.Push(o);
  }
  return arr;
}

// What one attempt does with one dataset, decided before any row runs (PlanWork).
struct DatasetWork {
  enum class Kind {
    kKept,     // published earlier from the same identity with no failed row: nothing to do
    kProcess,  // run the shard's rows (from the start, or from the journal's last commit)
    kRedo,     // published earlier with failed rows: run only those again
  };
  Kind kind = Kind::kProcess;
  size_t index = 0;
  const config::DatasetConfig* config = nullptr;
  std::optional<CompletedShard> published;  // the earlier publication (kKept, kRedo)
  std::optional<DatasetPlan> plan;          // kProcess, kRedo
  std::unique_ptr<ShardWriter> writer;      // kProcess, kRedo
};

// One attempt of one shard: the state, live counters, engines and report that the steps of RunShard share.
// Members are declared so that the progress thread (reporter_) stops before the poller and the timeline it
// feeds go, and the generator goes before its cache.
// Fleet replica health changes as "replica" timeline entries, each logged as one line by the fleet itself.
std::vector<TimelineEntry> ReplicaTimelineEvents(const std::vector<engine::FleetEvent>& events) {
  std::vector<TimelineEntry> out;
  for (const auto& ev : events) {
    TimelineEntry e;
    e.t = ev.t;
    e.event = "replica";
    e.replica = ev.replica;
    e.replica_name = ev.name;
    e.change = ev.change;
    out.push_back(std::move(e));
  }
  return out;
}

class ShardAttempt {
 public:
  ShardAttempt(const ShardRunOptions& opt, ShardState* state, int64_t attempt)
      : opt_(opt), env_(opt.env), config_(*opt.config), state_(state), start_us_(env_->MonotonicMicros()) {
    report_.attempt = attempt;
  }
  // The timeline polls the generator's fleet events from the progress thread: stopped before the generator goes.
  ~ShardAttempt() {
    if (timeline_) timeline_->SetEventSource(nullptr);
  }

  // Starts the heartbeat, progress.json and the timeline (before the model load: a long load must not look like
  // a dead shard).
  void StartReporting();
  void SampleAdmission(TimelineCounters* c);
  // Loads the engines of model outputs (counted as model load time), opens the generation cache, starts the
  // utilisation poller. Errors: the engines'.
  Status StartGenerator();
  // Planning: what this attempt does with dataset `d` — keep its publication, redo its failed rows, or run its
  // rows (opening the writer, which resumes from the journal when it can). Errors: unreadable dataset, the shard
  // output cannot be opened.
  Result<DatasetWork> PlanWork(size_t d);
  // Processing and redo: runs the work's rows into its writer, then publishes. On a stop request the writer
  // commits and stays resumable (kUnavailable "interrupted by …"). Errors: fatal ones only (row errors are
  // recorded by the writer).
  Status RunWork(DatasetWork* work);
  // Reporting: the first failed rows on stderr; kInvalidArgument when more rows failed than max_failed_rows.
  Status ReportFailures();
  // Reporting: shard statistics, status success, the end of the timeline.
  std::string BudgetStopMessage() const;
  Status RecordSuccess();
  // Records a failed attempt (timeline, status.json) and returns `s`.
  Status Fail(const Status& s);

  ShardRunReport& report() { return report_; }

 private:
  const ShardRunOptions& opt_;
  Env* env_;
  const config::Config& config_;
  ShardState* state_;
  uint64_t start_us_;
  ShardRunReport report_;
  std::vector<std::string> error_files_;
  int64_t known_total_ = 0;
  bool interrupted_ = false;  // a stop request ended RunWork: the attempt is recorded as interrupted
  StreamTotals totals_;
  Progress progress_;
  std::unique_ptr<TimelineRecorder> timeline_;
  std::unique_ptr<UtilizationPoller> poller_;
  std::unique_ptr<ShardProgressWriter> reporter_;
  std::unique_ptr<cache::GenerationCache> gen_cache_;  // outlives the generator's last generation
  std::unique_ptr<process::OutputGenerator> generator_;
  std::mutex admission_mu_;  // guards admission_: set here, read by the progress thread's timeline samples
  std::shared_ptr<const engine::AdmissionController> admission_;
};

// A hosted API's admission window and the limits in force, into a timeline sample (nothing without one).
void ShardAttempt::SampleAdmission(TimelineCounters* c) {
  std::lock_guard<std::mutex> lock(admission_mu_);
  if (!admission_) return;
  c->window = admission_->Window();
  if (double rpm = admission_->RequestsPerMinute(); rpm > 0) c->rpm_limit = rpm;
  if (double tpm = admission_->TokensPerMinute(); tpm > 0) c->tpm_limit = tpm;
}

void ShardAttempt::StartReporting() {
  timeline_ = std::make_unique<TimelineRecorder>(TimelineRecorder::Options{
      env_, config_.loading.state_dir, opt_.shard_id, report_.attempt, opt_.timeline_interval_seconds,
      [this] {
        TimelineCounters c{progress_.rows_done,   progress_.rows_failed,     progress_.rows_resumed,
                           totals_.prompt_tokens, totals_.completion_tokens, totals_.in_flight.load()};
        SampleAdmission(&c);
        return c;
      },
      opt_.slurm_job_id, opt_.slurm_array_task_id});
  TimelineRecorder* timeline = timeline_.get();
  ShardProgressOptions po;
  po.env = env_;
  po.state_dir = config_.loading.state_dir;
  po.shard_id = opt_.shard_id;
  po.counters = &progress_;
  po.display = opt_.quiet                  ? ShardProgressOptions::Display::kQuiet
               : opt_.progress_on_terminal ? ShardProgressOptions::Display::kTerminal
                                           : ShardProgressOptions::Display::kLog;
  po.stale_timeout_seconds = config_.execution.heartbeat_timeout_seconds;
  po.line_extra = [this, pricing = HostedPricing(config_, true)](double secs) {
    std::string extra;
    int64_t generated = totals_.completion_tokens - totals_.cached_completion_tokens;  // cache hits cost nothing
    if (generated > 0 && secs > 0)
      extra += ", " + FormatDouble(RoundTo(static_cast<double>(generated) / secs, 1)) + " tok/s";
    if (totals_.cached_generations > 0) extra += ", " + std::to_string(totals_.cached_generations.load()) + " cached";
    if (pricing) extra += ", $" + FormatDouble(RoundTo(TotalsCostUsd(*pricing, totals_), 4));
    return extra;
  };
  po.on_tick = [timeline] { timeline->Tick(); };
  reporter_ = std::make_unique<ShardProgressWriter>(std::move(po));
}

Status ShardAttempt::StartGenerator() {
  if (!config_.processing.outputs.empty()) {
    std::vector<std::string> warnings;
    process::EngineFactory factory =
        opt_.engine_factory ? opt_.engine_factory
                            : process::llm::DefaultEngineFactory({config_.loading.state_dir, opt_.shard_id, nullptr});
    auto g = process::OutputGenerator::Create(env_, config_, factory, &warnings);
    for (const auto& w : warnings) LOG_WARN(w);
    if (!g.ok()) return g.status();
    generator_ = std::move(*g);
    {
      std::lock_guard<std::mutex> lock(admission_mu_);
      admission_ = generator_->Admission();
    }
    bool any_llm = false;  // only llm generations are cached
    for (const auto& o : config_.processing.outputs) any_llm = any_llm || o.type == "llm";
    if (any_llm) gen_cache_ = process::OpenGenerationCache(env_, config_);
    generator_->EnableCache(gen_cache_.get());
    timeline_->Loaded(generator_->LoadSeconds(), generator_->Capacity());
    timeline_->SetEventSource([g = generator_.get()] { return ReplicaTimelineEvents(g->TakeReplicaEvents()); });
    LOG_INFO("Model loaded in " << FormatDouble(RoundTo(generator_->LoadSeconds(), 3)) << " s ("
                                << generator_->Capacity() << " parallel sequences)");
  }
  // CPU utilisation always; GPU utilisation with --stats / MMIRAGE_COLLECT_STATS=1 (NVML, nvidia-smi fallback).
  UtilizationPollerOptions upo = DefaultUtilizationOptions(
      env_, GpuDevicesForShard(opt_.cuda_visible_devices, generator_ ? std::max(1, generator_->NumGpus()) : 1));
  if (!opt_.collect_gpu_stats) upo.gpu.reset();
  poller_ = std::make_unique<UtilizationPoller>(std::move(upo));
  poller_->Start();
  timeline_->SetPoller(poller_.get());
  return Status::OK();
}

Result<DatasetWork> ShardAttempt::PlanWork(size_t d) {
  DatasetWork w;
  w.index = d;
  w.config = &config_.loading.datasets[d];
  const config::DatasetConfig& dc = *w.config;
  // The resume identity (expanded config, shard layout, input files): a partial or published output of another
  // identity is never continued or kept.
  Value identity = DatasetIdentity(env_, config_, d, opt_.shard_id);
  const uint64_t fingerprint = IdentityFingerprint(identity);
  // Published by an earlier attempt of this same identity, with no failed row: nothing to redo.
  w.published = ReadCompletedShard(env_, dc.output_dir, opt_.shard_id);
  if (w.published && w.published->fingerprint != fingerprint) {
    LOG_WARN("dataset " << dc.output_dir << ": shard " << opt_.shard_id << " was published from other inputs ("
                        << DescribeIdentityChange(w.published->identity, identity)
                        << "); it is computed again from the start");
    w.published.reset();
  }
  if (w.published) {  // a crash right after publishing can leave its journal behind
    if (Status t = ShardWriter::TidyPublished(env_, dc.output_dir, opt_.shard_id); !t.ok()) {
      return t.WithContext("cannot tidy the published shard");
    }
  }
  if (w.published && w.published->rows_failed == 0) {
    w.kind = DatasetWork::Kind::kKept;
    return w;
  }
  auto plan = PlanDataset(env_, dc, config_.loading.num_shards, opt_.shard_id);
  if (!plan.ok()) return plan.status();
  w.plan = std::move(*plan);
  std::vector<std::string> splits;
  for (const auto& part : w.plan->parts) splits.push_back(part.split);
  ShardWriterOptions wo{dc.output_dir, opt_.shard_id, splits, fingerprint};
  wo.identity = std::move(identity);
  for (const auto& r : w.plan->ranges) wo.split_rows.push_back(r.size());
  wo.output_format = *ParseOutputFormat(dc.output_format);  // validated by the config loader
  auto writer = ShardWriter::Open(env_, wo);
  if (!writer.ok()) return writer.status().WithContext("cannot open the shard output");
  w.writer = std::move(*writer);
  // A journal to resume wins over redoing the publication's failed rows (the redo itself was interrupted).
  w.kind = w.published && !w.writer->resumed() ? DatasetWork::Kind::kRedo : DatasetWork::Kind::kProcess;
  return w;
}

Status ShardAttempt::RunWork(DatasetWork* w) {
  const config::DatasetConfig& dc = *w->config;
  if (w->kind == DatasetWork::Kind::kKept) {
    LOG_INFO("dataset " << dc.output_dir << ": shard " << opt_.shard_id << " already complete ("
                        << w->published->rows_written << " rows); kept");
    report_.rows_written += w->published->rows_written;
    progress_.rows_done += w->published->rows_written;
    progress_.rows_resumed += w->published->rows_written;
    report_.output_dirs.push_back(JoinPath(dc.output_dir, "shard_" + std::to_string(opt_.shard_id)));
    return Status::OK();
  }
  if (config_.loading.num_shards > 1) {  // a single-shard run does not count its rows first
    for (const auto& r : w->plan->ranges) known_total_ += static_cast<int64_t>(r.size());
    progress_.rows_total = known_total_;
  }
  ShardWriter* writer = w->writer.get();
  if (writer->resumed()) {
    uint64_t rows = 0;
    for (size_t i = 0; i < w->plan->parts.size(); ++i) rows += writer->resume_rows(i);
    LOG_INFO("dataset " << dc.output_dir << ": resuming shard " << opt_.shard_id << " after " << rows
                        << " committed rows");
    progress_.rows_done += static_cast<int64_t>(rows);
    progress_.rows_resumed += static_cast<int64_t>(rows);
    progress_.rows_failed += writer->rows_failed();
  }
  Status s;
  if (w->kind == DatasetWork::Kind::kRedo) {
    LOG_INFO("dataset " << dc.output_dir << ": retrying the " << w->published->rows_failed
                        << " failed row(s) of the previous attempt; the other rows are kept");
    s = RedoFailedRows(env_, config_, *w->plan, generator_.get(), writer, &totals_, &progress_,
                       JoinPath(dc.output_dir, "shard_" + std::to_string(opt_.shard_id)));
  } else {
    s = ProcessDataset(env_, config_, *w->plan, generator_.get(), writer, &totals_, &progress_);
  }
  if (!s.ok()) {
    // The generations of abandoned rows end here (their results are not recorded).
    if (generator_) generator_->Shutdown();
    // Keep what is committed: the next attempt resumes from there.
    if (s.IsUnavailable() && (StopRequested() || totals_.budget_reached)) {
      Status c = writer->Commit();
      writer->Abandon();
      reporter_.reset();
      std::string why = std::string("interrupted by ") + StopSignalName() + " after " +
                        std::to_string(progress_.rows_done.load()) + " rows (resumable)";
      if (!StopRequested()) why = BudgetStopMessage();
      if (!c.ok()) why += "; last commit failed: " + c.message();
      interrupted_ = true;
      return Status::Unavailable(why);
    }
    writer->Abandon();
    return s;
  }
  int64_t failed = writer->rows_failed();
  report_.rows_written += writer->rows_written();
  report_.rows_failed += failed;
  s = writer->Finish();
  if (!s.ok()) return s.WithContext("cannot publish " + writer->final_dir());
  report_.output_dirs.push_back(writer->final_dir());
  if (failed > 0) error_files_.push_back(JoinPath(writer->final_dir(), "errors.jsonl"));
  return Status::OK();
}

Status ShardAttempt::ReportFailures() {
  reporter_.reset();
  std::string where;
  for (const auto& f : error_files_) where += (where.empty() ? "" : ", ") + f;
  if (report_.rows_failed > 0) {
    // The first failed rows with FILE:LINE, stage and message: enough to act on without opening errors.jsonl.
    LogFailedRows(FirstFailures(env_, error_files_));
  }
  const int64_t max_failed = config_.execution.max_failed_rows;
  if (report_.rows_failed > max_failed) {
    return Status::InvalidArgument(std::to_string(report_.rows_failed) +
                                   " row(s) failed (max_failed_rows=" + std::to_string(max_failed) + "); see " + where);
  }
  if (report_.rows_failed > 0) {
    LOG_WARN(report_.rows_failed << " row(s) failed and were recorded in " << where
                                 << " (within max_failed_rows=" << max_failed << ")");
  }
  return Status::OK();
}

std::string ShardAttempt::BudgetStopMessage() const {
  double spent = 0;
  if (auto pricing = HostedPricing(config_, false)) spent = TotalsCostUsd(*pricing, totals_);
  return "max_cost_usd (" + FormatDouble(*config_.execution.max_cost_usd) + ") reached: $" +
         FormatDouble(RoundTo(spent, 4)) + " spent after " + std::to_string(progress_.rows_done.load()) +
         " rows; run again to continue (resumable)";
}

// A fleet's replicas, their restarts and per-replica output tokens (nothing without a fleet).
void RecordReplicaStats(const std::vector<engine::ReplicaStats>& replicas, ShardStats* stats) {
  if (replicas.empty()) return;
  stats->replicas = static_cast<int64_t>(replicas.size());
  stats->replica_restarts = 0;
  std::vector<Value> tokens;
  for (const auto& r : replicas) {
    *stats->replica_restarts += r.restarts;
    tokens.emplace_back(r.completion_tokens);
  }
  stats->replica_output_tokens = Value(std::move(tokens));
}

Status ShardAttempt::RecordSuccess() {
  poller_->Stop();
  ShardStats stats;
  poller_->Summary().ApplyTo(&stats);
  stats.runtime_seconds = RoundTo(static_cast<double>(env_->MonotonicMicros() - start_us_) / 1e6, 3);
  stats.rows_processed = report_.rows_written;
  if (generator_) {
    generator_->Shutdown();
    // GPUs the engine really used (0 on CPU: per-GPU rates are then null, not divided by a GPU that was idle).
    stats.num_gpus = generator_->NumGpus();
    RecordReplicaStats(generator_->ReplicaStats(), &stats);
    if (generator_->LoadSeconds() > 0) stats.model_load_seconds = RoundTo(generator_->LoadSeconds(), 3);
    // Generated tokens only: what the cache answered costs no inference time (counted apart).
    int64_t in = totals_.prompt_tokens - totals_.cached_prompt_tokens;
    int64_t out = totals_.completion_tokens - totals_.cached_completion_tokens;
    if (in > 0) stats.input_tokens = in;
    if (out > 0) stats.output_tokens = out;
    if (auto pricing = HostedPricing(config_, false)) stats.cost_usd = RoundTo(TotalsCostUsd(*pricing, totals_), 6);
    if (gen_cache_) {
      stats.cached_generations = totals_.cached_generations;
      stats.cached_output_tokens = totals_.cached_completion_tokens;
      Status cs = gen_cache_->Close();
      if (!cs.ok()) LOG_WARN(cs.message());
      const cache::CacheCounters& cc = gen_cache_->counters();
      double cache_s = static_cast<double>(cc.busy_us) / 1e6 + generator_->CacheKeySeconds();
      LOG_INFO("Generation cache: " << totals_.cached_generations.load() << " of " << totals_.generations.load()
                                    << " generations answered from " << config_.execution.cache_dir << " ("
                                    << cc.inserts.load() << " stored, " << FormatDouble(RoundTo(cache_s, 4))
                                    << " s spent on the cache)");
    }
    const engine::EngineCounters counters = generator_->Counters();
    stats.prompt_tokens_reused = counters.prompt_tokens_reused;
    if (counters.images_encoded + counters.images_reused > 0) {
      stats.images_encoded = counters.images_encoded;
      stats.images_reused = counters.images_reused;
    }
  }
  auto inf = stats.InferenceRuntime();
  if (inf && *inf > 0) stats.throughput_rows_per_sec = RoundTo(static_cast<double>(stats.rows_processed) / *inf, 2);
  Status m = state_->MarkSuccess(stats.ToValue(), report_.rows_failed);
  timeline_->End(m.ok() ? "success" : "failed", m.ok() ? "" : m.message());
  if (!m.ok()) return m.WithContext("cannot mark the shard successful");
  LOG_INFO("Shard " << opt_.shard_id << " done: " << report_.rows_written << " rows written, " << report_.rows_failed
                    << " failed, " << FormatDouble(*stats.runtime_seconds) << " s");
  return Status::OK();
}

Status ShardAttempt::Fail(const Status& s) {
  if (timeline_) timeline_->End(StopRequested() || interrupted_ ? "interrupted" : "failed", s.message());
  Status m = interrupted_ ? state_->MarkInterrupted(s.message(), report_.rows_failed)
                          : state_->MarkFailed(s.message(), report_.rows_failed);
  if (!m.ok()) LOG_ERROR("cannot record the failure in the state directory: " << m.message());
  return s;
}

}  // namespace

Status CheckRunnable(const config::Config& config) {
  for (const auto& o : config.processing.outputs) {
    if (o.type == "custom" || o.type == "image_gen") continue;  // checked when the processor starts
    if (o.type != "llm") {
      return Status::InvalidArgument(o.loc.ToString() + ": output '" + o.name + "' needs the '" + o.type +
                                     "' processor, which this build cannot run yet (use `mmirage preview` to "
                                     "check its prompts)");
    }
    const config::Processor* p = config.FindProcessor(o.type);
    // Per backend: the model file (llama, llama-server), the llama-server binary; endpoints are checked at start.
    if (p != nullptr) MMIRAGE_TRY(process::llm::CheckBackendRunnable(*p));
  }
  return Status::OK();
}

// The steps of an attempt: record it, start reporting and the engines, then per dataset plan and run (process or
// redo, then publish), then report. Any fatal error ends the attempt as failed.
Result<ShardRunReport> RunShard(const ShardRunOptions& opt) {
  const config::Config& config = *opt.config;
  MMIRAGE_TRY(CheckRunnable(config));
  ShardState state(opt.env, config.loading.state_dir, opt.shard_id);
  ShardState::RunInfo info;
  info.datasets = DatasetsInfo(config);
  info.slurm_job_id = opt.slurm_job_id;
  info.slurm_array_task_id = opt.slurm_array_task_id;
  MMIRAGE_ASSIGN_OR_RETURN(int64_t attempt, state.MarkRunning(info));
  LOG_INFO("Starting shard " << opt.shard_id << "/" << config.loading.num_shards - 1 << " (attempt #" << attempt
                             << ")");
  ShardAttempt run(opt, &state, attempt);
  run.StartReporting();
  if (Status s = run.StartGenerator(); !s.ok()) return run.Fail(s);
  for (size_t d = 0; d < config.loading.datasets.size(); ++d) {
    auto work = run.PlanWork(d);
    if (!work.ok()) return run.Fail(work.status());
    if (Status s = run.RunWork(&*work); !s.ok()) return run.Fail(s);
  }
  if (Status s = run.ReportFailures(); !s.ok()) return run.Fail(s);
  if (Status s = run.RecordSuccess(); !s.ok()) return s;
  return run.report();
}

}  // namespace mmirage::pipeline
