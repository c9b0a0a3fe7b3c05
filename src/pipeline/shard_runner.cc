#include "pipeline/shard_runner.h"

#include <algorithm>
#include <memory>

#include "data/dataset.h"
#include "data/json.h"
#include "pipeline/row_batches.h"
#include "pipeline/stream_scheduler.h"
#include "process/model_ref.h"
#include "pipeline/row_transform.h"
#include "pipeline/shard_writer.h"
#include "state/shard_state.h"
#include "stats/shard_stats.h"
#include "util/log.h"

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
  auto parts = ResolveDatasetParts(env, dc.path, dc.splits);
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

// Streams one dataset's shard through the row stages into `writer`. Returns a fatal error only.
Status ProcessDataset(Env* env, const config::Config& config, const DatasetPlan& plan,
                      process::OutputGenerator* generator, ShardWriter* writer, StreamTotals* totals) {
  RowTransform transform(&config, env, plan.config->image_base_path.value_or(""));
  for (size_t p = 0; p < plan.parts.size(); ++p) {
    RowStream stream(env, plan.parts[p], plan.ranges[p]);
    auto sink = [&](ProcessedBatch& batch) -> Status {
      MMIRAGE_TRY(writer->AddSerialized(p, batch.lines, batch.rows));
      for (const auto& f : batch.failures) MMIRAGE_TRY(writer->AddError(p, f.row_index, f.source, f.error));
      return Status::OK();
    };
    if (generator == nullptr) {
      MMIRAGE_TRY(RunRowBatches(&stream, transform, RowBatchOptions{}, sink));
    } else {
      // The window bounds rows in flight; batch_size only widens it (it never synchronises).
      StreamOptions so;
      so.window = std::max<size_t>(static_cast<size_t>(config.loading.batch_size),
                                   static_cast<size_t>(4 * generator->Capacity()));
      MMIRAGE_TRY(RunStreaming(&stream, transform, generator, so, sink, totals));
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

}  // namespace

Status CheckRunnable(const config::Config& config) {
  for (const auto& o : config.processing.outputs) {
    if (o.type != "llm") {
      return Status::InvalidArgument(o.loc.ToString() + ": output '" + o.name + "' needs the '" + o.type +
                                     "' processor, which this build cannot run yet (use `mmirage preview` to "
                                     "check its prompts)");
    }
    const config::Processor* p = config.FindProcessor(o.type);
    if (p != nullptr && p->llm.backend != "llama") {
      return Status::InvalidArgument(p->loc.ToString() + ": backend '" + p->llm.backend +
                                     "' is not available in this build yet (use backend: llama)");
    }
    if (p != nullptr && process::IsHfModelRef(p->llm.model_path)) {
      Status ref = process::ParseHfModelRef(p->llm.model_path).status();  // well-formed; downloaded at load
      if (!ref.ok()) return ref.WithContext(p->loc.ToString() + ": server_args.model_path");
    } else if (p != nullptr) {
      Env* env = Env::Default();
      if (!env->IsRegularFile(p->llm.model_path)) {
        return Status::NotFound(p->loc.ToString() + ": model file not found: '" + p->llm.model_path +
                                "' (server_args.model_path must name a GGUF file)");
      }
    }
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
  auto fail = [&](const Status& s) -> Status {
    Status m = state.MarkFailed(s.message(), report.rows_failed);
    if (!m.ok()) LOG_ERROR("cannot record the failure in the state directory: " << m.message());
    return s;
  };

  // Model outputs: load the engines (counted as model load time).
  std::unique_ptr<process::OutputGenerator> generator;
  if (!config.processing.outputs.empty()) {
    std::vector<std::string> warnings;
    auto g = process::OutputGenerator::Create(
        config, opt.engine_factory ? opt.engine_factory : process::LlamaEngineFactory(), &warnings);
    for (const auto& w : warnings) LOG_WARN(w);
    if (!g.ok()) return fail(g.status());
    generator = std::move(*g);
    LOG_INFO("Model loaded in " << FormatDouble(RoundTo(generator->LoadSeconds(), 3)) << " s ("
                                << generator->Capacity() << " parallel sequences)");
  }
  StreamTotals totals;

  std::vector<std::string> error_files;
  for (const auto& dc : config.loading.datasets) {
    auto plan = PlanDataset(env, dc, config.loading.num_shards, opt.shard_id);
    if (!plan.ok()) return fail(plan.status());
    std::vector<std::string> splits;
    for (const auto& part : plan->parts) splits.push_back(part.split);
    auto writer = ShardWriter::Open(env, dc.output_dir, opt.shard_id, splits);
    if (!writer.ok()) return fail(writer.status().WithContext("cannot open the shard output"));
    Status s = ProcessDataset(env, config, *plan, generator.get(), writer->get(), &totals);
    if (!s.ok()) {
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

  if (report.rows_failed > config.execution.max_failed_rows) {
    std::string where;
    for (const auto& f : error_files) where += (where.empty() ? "" : ", ") + f;
    return fail(Status::InvalidArgument(std::to_string(report.rows_failed) + " row(s) failed (max_failed_rows=" +
                                        std::to_string(config.execution.max_failed_rows) + "); see " + where));
  }
  if (report.rows_failed > 0) {
    LOG_WARN(report.rows_failed << " row(s) failed and were recorded in errors.jsonl (within max_failed_rows="
                                << config.execution.max_failed_rows << ")");
  }

  ShardStats stats;
  stats.runtime_seconds = RoundTo(static_cast<double>(env->MonotonicMicros() - start_us) / 1e6, 3);
  stats.rows_processed = report.rows_written;
  if (generator) {
    generator->Shutdown();
    // GPUs the engine really used (0 on CPU: per-GPU rates are then null, not divided by a GPU that was idle).
    stats.num_gpus = generator->NumGpus();
    if (generator->LoadSeconds() > 0) stats.model_load_seconds = RoundTo(generator->LoadSeconds(), 3);
    if (totals.prompt_tokens > 0) stats.input_tokens = totals.prompt_tokens;
    if (totals.completion_tokens > 0) stats.output_tokens = totals.completion_tokens;
    stats.prompt_tokens_reused = generator->Counters().prompt_tokens_reused;
  }
  auto inf = stats.InferenceRuntime();
  if (inf && *inf > 0) stats.throughput_rows_per_sec = RoundTo(static_cast<double>(stats.rows_processed) / *inf, 2);
  Status m = state.MarkSuccess(stats.ToValue(), report.rows_failed);
  if (!m.ok()) return m.WithContext("cannot mark the shard successful");
  LOG_INFO("Shard " << opt.shard_id << " done: " << report.rows_written << " rows written, " << report.rows_failed
                    << " failed, " << FormatDouble(*stats.runtime_seconds) << " s");
  return report;
}

}  // namespace mmirage::pipeline
