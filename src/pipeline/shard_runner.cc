#include "pipeline/shard_runner.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
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
#include "pipeline/failure_report.h"
#include "pipeline/input_identity.h"
#include "pipeline/row_batches.h"
#include "pipeline/stream_scheduler.h"
#include "process/cache_key.h"
#include "pipeline/timeline_recorder.h"
#include "process/engine_factory.h"
#include "process/model_ref.h"
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

// Streams one dataset's shard through the row stages into `writer`, committing every `commit_every_rows` rows or
// `commit_interval_seconds`. Parts resume where the writer's journal says. Returns a fatal error only
// (kUnavailable "interrupted" after a stop request: what is committed stays resumable).
Status ProcessDataset(Env* env, const config::Config& config, const DatasetPlan& plan,
                      process::OutputGenerator* generator, ShardWriter* writer, StreamTotals* totals,
                      Progress* progress) {
  RowTransform transform(&config, env, plan.config->image_base_path.value_or(""));
  transform.set_tag_bytes(plan.config->output_format != "jsonl");
  transform.set_cast_images(config.processing.cast_images && plan.config->output_format != "jsonl");
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
    if (generator == nullptr) {
      MMIRAGE_TRY(RunRowBatches(&stream, transform, RowBatchOptions{}, sink));
      if (StopRequested()) return Status::Unavailable("interrupted");
    } else {
      // The window bounds rows in flight; batch_size only widens it (it never synchronises).
      StreamOptions so;
      so.window = std::max<size_t>(static_cast<size_t>(config.loading.batch_size),
                                   static_cast<size_t>(4 * generator->Capacity()));
      so.flush_rows = std::max<size_t>(1, std::min<size_t>(so.window / 2, 64));
      so.sample_offset = SampleOffset(plan, p);
      MMIRAGE_TRY(RunStreaming(&stream, transform, generator, so, sink, totals));
    }
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
  RowTransform transform(&config, env, plan.config->image_base_path.value_or(""));
  transform.set_tag_bytes(plan.config->output_format != "jsonl");
  transform.set_cast_images(config.processing.cast_images && plan.config->output_format != "jsonl");
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
      if (generator == nullptr) {
        MMIRAGE_TRY(RunRowBatches(&stream, transform, RowBatchOptions{}, sink));
      } else {
        StreamOptions so;
        so.window = static_cast<size_t>(4 * generator->Capacity());
        so.sample_offset = SampleOffset(plan, p);
        MMIRAGE_TRY(RunStreaming(&stream, transform, generator, so, sink, totals));
      }
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

// Identifies (config, dataset, shard layout): a partial or published output of another identity is redone.
uint64_t DatasetFingerprint(const config::Config& config, size_t dataset_index, int64_t shard_id) {
  uint64_t h = config.fingerprint;
  for (uint64_t x : {static_cast<uint64_t>(dataset_index), static_cast<uint64_t>(shard_id),
                     static_cast<uint64_t>(config.loading.num_shards)}) {
    h = (h ^ x) * 1099511628211ull;
  }
  return h;
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
    if (p != nullptr) MMIRAGE_TRY(process::CheckBackendRunnable(*p));
  }
  return Status::OK();
}

Result<ShardRunReport> RunShard(const ShardRunOptions& opt) {
  Env* env = opt.env;
  const config::Config& config = *opt.config;
  MMIRAGE_TRY(CheckRunnable(config));
  ShardState state(env, config.loading.state_dir, opt.shard_id);
  ShardState::RunInfo info;
  info.datasets = DatasetsInfo(config);
  info.slurm_job_id = opt.slurm_job_id;
  info.slurm_array_task_id = opt.slurm_array_task_id;
  uint64_t start_us = env->MonotonicMicros();
  MMIRAGE_ASSIGN_OR_RETURN(int64_t attempt, state.MarkRunning(info));
  LOG_INFO("Starting shard " << opt.shard_id << "/" << config.loading.num_shards - 1 << " (attempt #" << attempt
                             << ")");
  ShardRunReport report;
  report.attempt = attempt;
  TimelineRecorder* timeline_ptr = nullptr;  // set once the timeline exists
  auto fail = [&](const Status& s) -> Status {
    if (timeline_ptr) timeline_ptr->End(StopRequested() ? "interrupted" : "failed", s.message());
    Status m = state.MarkFailed(s.message(), report.rows_failed);
    if (!m.ok()) LOG_ERROR("cannot record the failure in the state directory: " << m.message());
    return s;
  };

  // Heartbeat and progress from now on: a long model load must not look like a dead shard.
  StreamTotals totals;
  Progress progress;
  TimelineRecorder timeline({env, config.loading.state_dir, opt.shard_id, attempt, opt.timeline_interval_seconds,
                             [&] {
                               return TimelineCounters{progress.rows_done, progress.rows_failed,
                                                       progress.rows_resumed, totals.prompt_tokens,
                                                       totals.completion_tokens, totals.in_flight.load()};
                             },
                             opt.slurm_job_id, opt.slurm_array_task_id});
  ShardProgressOptions po;
  po.env = env;
  po.state_dir = config.loading.state_dir;
  po.shard_id = opt.shard_id;
  po.counters = &progress;
  po.display = opt.quiet                  ? ShardProgressOptions::Display::kQuiet
               : opt.progress_on_terminal ? ShardProgressOptions::Display::kTerminal
                                          : ShardProgressOptions::Display::kLog;
  po.stale_timeout_seconds = config.execution.heartbeat_timeout_seconds;
  po.line_extra = [&totals](double secs) {
    std::string extra;
    int64_t generated = totals.completion_tokens - totals.cached_completion_tokens;  // cache hits cost nothing
    if (generated > 0 && secs > 0)
      extra += ", " + FormatDouble(RoundTo(static_cast<double>(generated) / secs, 1)) + " tok/s";
    if (totals.cached_generations > 0) extra += ", " + std::to_string(totals.cached_generations.load()) + " cached";
    return extra;
  };
  po.on_tick = [&timeline] { timeline.Tick(); };
  auto reporter = std::make_unique<ShardProgressWriter>(std::move(po));
  timeline_ptr = &timeline;

  // Model outputs: load the engines (counted as model load time), then open the generation cache (declared
  // first: it outlives the generator's last generation).
  std::unique_ptr<cache::GenerationCache> gen_cache;
  std::unique_ptr<process::OutputGenerator> generator;
  if (!config.processing.outputs.empty()) {
    std::vector<std::string> warnings;
    process::EngineFactory factory = opt.engine_factory ? opt.engine_factory
                                                        : process::DefaultEngineFactory(
                                                              {config.loading.state_dir, opt.shard_id, nullptr});
    auto g = process::OutputGenerator::Create(config, factory, &warnings);
    for (const auto& w : warnings) LOG_WARN(w);
    if (!g.ok()) return fail(g.status());
    generator = std::move(*g);
    bool any_llm = false;  // only llm generations are cached
    for (const auto& o : config.processing.outputs) any_llm = any_llm || o.type == "llm";
    if (any_llm) gen_cache = process::OpenGenerationCache(env, config);
    generator->EnableCache(gen_cache.get());
    timeline.Loaded(generator->LoadSeconds(), generator->Capacity());
    LOG_INFO("Model loaded in " << FormatDouble(RoundTo(generator->LoadSeconds(), 3)) << " s ("
                                << generator->Capacity() << " parallel sequences)");
  }
  // CPU utilisation always; GPU utilisation with --stats / MMIRAGE_COLLECT_STATS=1 (NVML, nvidia-smi fallback).
  UtilizationPollerOptions upo = DefaultUtilizationOptions(
      env, GpuDevicesForShard(opt.cuda_visible_devices, generator ? std::max(1, generator->NumGpus()) : 1));
  if (!opt.collect_gpu_stats) upo.gpu.reset();
  UtilizationPoller poller(std::move(upo));
  poller.Start();
  timeline.SetPoller(&poller);

  std::vector<std::string> error_files;
  int64_t known_total = 0;
  bool total_known = config.loading.num_shards > 1;
  for (size_t d = 0; d < config.loading.datasets.size(); ++d) {
    const config::DatasetConfig& dc = config.loading.datasets[d];
    uint64_t fingerprint = DatasetFingerprint(config, d, opt.shard_id);
    // Changed input files (path, size, first 64 KiB) change the fingerprint: never resume onto other data.
    if (auto ident = InputIdentity(env, dc); ident.ok()) fingerprint = (fingerprint ^ *ident) * 1099511628211ull;
    // Published by an earlier attempt of this same config and shard, with no failed row: nothing to redo.
    auto done = ReadCompletedShard(env, dc.output_dir, opt.shard_id);
    if (done && done->fingerprint != fingerprint) {
      LOG_WARN("dataset " << dc.output_dir << ": shard " << opt.shard_id
                          << " was published from another config or other input data (" << dc.path
                          << " changed?); it is computed again from the start");
      done.reset();
    }
    if (done && done->rows_failed == 0) {
      LOG_INFO("dataset " << dc.output_dir << ": shard " << opt.shard_id << " already complete ("
                          << done->rows_written << " rows); kept");
      report.rows_written += done->rows_written;
      progress.rows_done += done->rows_written;
      progress.rows_resumed += done->rows_written;
      report.output_dirs.push_back(JoinPath(dc.output_dir, "shard_" + std::to_string(opt.shard_id)));
      continue;
    }
    auto plan = PlanDataset(env, dc, config.loading.num_shards, opt.shard_id);
    if (!plan.ok()) return fail(plan.status());
    if (total_known) {
      for (const auto& r : plan->ranges) known_total += static_cast<int64_t>(r.size());
      progress.rows_total = known_total;
    }
    std::vector<std::string> splits;
    for (const auto& part : plan->parts) splits.push_back(part.split);
    ShardWriterOptions wo{dc.output_dir, opt.shard_id, splits, fingerprint};
    wo.output_format = *ParseOutputFormat(dc.output_format);  // validated by the config loader
    auto writer = ShardWriter::Open(env, wo);
    if (!writer.ok()) return fail(writer.status().WithContext("cannot open the shard output"));
    if ((*writer)->resumed()) {
      uint64_t rows = 0;
      for (size_t i = 0; i < splits.size(); ++i) rows += (*writer)->resume_rows(i);
      LOG_INFO("dataset " << dc.output_dir << ": resuming shard " << opt.shard_id << " after " << rows
                          << " committed rows");
      progress.rows_done += static_cast<int64_t>(rows);
      progress.rows_resumed += static_cast<int64_t>(rows);
      progress.rows_failed += (*writer)->rows_failed();
    }
    Status s;
    if (done && !(*writer)->resumed()) {
      LOG_INFO("dataset " << dc.output_dir << ": retrying the " << done->rows_failed
                          << " failed row(s) of the previous attempt; the other rows are kept");
      s = RedoFailedRows(env, config, *plan, generator.get(), writer->get(), &totals, &progress,
                         JoinPath(dc.output_dir, "shard_" + std::to_string(opt.shard_id)));
    } else {
      s = ProcessDataset(env, config, *plan, generator.get(), writer->get(), &totals, &progress);
    }
    if (!s.ok()) {
      // Keep what is committed: the next attempt resumes from there.
      if (s.IsUnavailable() && StopRequested()) {
        Status c = (*writer)->Commit();
        (*writer)->Abandon();
        reporter.reset();
        std::string why = std::string("interrupted by ") + StopSignalName() +
                          " after " + std::to_string(progress.rows_done.load()) + " rows (resumable)";
        if (!c.ok()) why += "; last commit failed: " + c.message();
        return fail(Status::Unavailable(why));
      }
      (*writer)->Abandon();
      return fail(s);
    }
    int64_t failed = (*writer)->rows_failed();
    report.rows_written += (*writer)->rows_written();
    report.rows_failed += failed;
    s = (*writer)->Finish();
    if (!s.ok()) return fail(s.WithContext("cannot publish " + (*writer)->final_dir()));
    report.output_dirs.push_back((*writer)->final_dir());
    if (failed > 0) error_files.push_back(JoinPath((*writer)->final_dir(), "errors.jsonl"));
  }
  reporter.reset();

  std::string where;
  for (const auto& f : error_files) where += (where.empty() ? "" : ", ") + f;
  if (report.rows_failed > 0) {
    // The first failed rows with FILE:LINE, stage and message: enough to act on without opening errors.jsonl.
    LogFailedRows(FirstFailures(env, error_files));
  }
  if (report.rows_failed > config.execution.max_failed_rows) {
    return fail(Status::InvalidArgument(std::to_string(report.rows_failed) + " row(s) failed (max_failed_rows=" +
                                        std::to_string(config.execution.max_failed_rows) + "); see " + where));
  }
  if (report.rows_failed > 0) {
    LOG_WARN(report.rows_failed << " row(s) failed and were recorded in " << where << " (within max_failed_rows="
                                << config.execution.max_failed_rows << ")");
  }

  poller.Stop();
  ShardStats stats;
  poller.Summary().ApplyTo(&stats);
  stats.runtime_seconds = RoundTo(static_cast<double>(env->MonotonicMicros() - start_us) / 1e6, 3);
  stats.rows_processed = report.rows_written;
  if (generator) {
    generator->Shutdown();
    // GPUs the engine really used (0 on CPU: per-GPU rates are then null, not divided by a GPU that was idle).
    stats.num_gpus = generator->NumGpus();
    if (generator->LoadSeconds() > 0) stats.model_load_seconds = RoundTo(generator->LoadSeconds(), 3);
    // Generated tokens only: what the cache answered costs no inference time (counted apart).
    int64_t in = totals.prompt_tokens - totals.cached_prompt_tokens;
    int64_t out = totals.completion_tokens - totals.cached_completion_tokens;
    if (in > 0) stats.input_tokens = in;
    if (out > 0) stats.output_tokens = out;
    if (gen_cache) {
      stats.cached_generations = totals.cached_generations;
      stats.cached_output_tokens = totals.cached_completion_tokens;
      Status cs = gen_cache->Close();
      if (!cs.ok()) LOG_WARN(cs.message());
      const cache::CacheCounters& cc = gen_cache->counters();
      double cache_s = static_cast<double>(cc.busy_us) / 1e6 + generator->CacheKeySeconds();
      LOG_INFO("Generation cache: " << totals.cached_generations.load() << " of " << totals.generations.load()
                                    << " generations answered from " << config.execution.cache_dir << " ("
                                    << cc.inserts.load() << " stored, " << FormatDouble(RoundTo(cache_s, 4))
                                    << " s spent on the cache)");
    }
    const engine::EngineCounters counters = generator->Counters();
    stats.prompt_tokens_reused = counters.prompt_tokens_reused;
    if (counters.images_encoded + counters.images_reused > 0) {
      stats.images_encoded = counters.images_encoded;
      stats.images_reused = counters.images_reused;
    }
  }
  auto inf = stats.InferenceRuntime();
  if (inf && *inf > 0) stats.throughput_rows_per_sec = RoundTo(static_cast<double>(stats.rows_processed) / *inf, 2);
  Status m = state.MarkSuccess(stats.ToValue(), report.rows_failed);
  timeline.End(m.ok() ? "success" : "failed", m.ok() ? "" : m.message());
  if (!m.ok()) return m.WithContext("cannot mark the shard successful");
  LOG_INFO("Shard " << opt.shard_id << " done: " << report.rows_written << " rows written, " << report.rows_failed
                    << " failed, " << FormatDouble(*stats.runtime_seconds) << " s");
  return report;
}

}  // namespace mmirage::pipeline
