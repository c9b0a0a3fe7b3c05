#include "pipeline/batch_shard.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <unordered_map>

#include "data/dataset.h"
#include "data/json.h"
#include "data/line_reader.h"
#include "pipeline/batch_journal.h"
#include "pipeline/row_transform.h"
#include "pipeline/shard_writer.h"
#include "process/batch_chunker.h"
#include "process/batch_provider.h"
#include "process/batch_request.h"
#include "process/json_output.h"
#include "state/shard_state.h"
#include "stats/shard_stats.h"
#include "util/log.h"
#include "util/signals.h"

namespace mmirage::pipeline {
namespace {

using process::BatchAnswer;

constexpr double kRecoveryGraceSeconds = 5;

std::string Pad6(int64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%06lld", static_cast<long long>(n));
  return buf;
}

std::string RandomRunId() {
  std::random_device rd;
  char buf[8];
  std::snprintf(buf, sizeof buf, "%06x", static_cast<unsigned>(rd()) & 0xffffffu);
  return buf;
}

// UTC ISO-8601 with microseconds and +00:00, as Python's datetime.now(timezone.utc).isoformat().
std::string UtcIsoNow(Env* env) {
  uint64_t us = env->NowMicros();
  time_t t = static_cast<time_t>(us / 1000000);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06d+00:00", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(us % 1000000));
  return buf;
}

std::string Strip(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

uint64_t DatasetFingerprint(const config::Config& config, size_t dataset_index, int64_t shard_id) {
  uint64_t h = config.fingerprint;
  for (uint64_t x : {static_cast<uint64_t>(dataset_index), static_cast<uint64_t>(shard_id),
                     static_cast<uint64_t>(config.loading.num_shards)}) {
    h = (h ^ x) * 1099511628211ull;
  }
  return h;
}

struct Plan {
  std::vector<DatasetPart> parts;
  std::vector<RowRange> ranges;
};

Result<Plan> PlanDataset(Env* env, const config::DatasetConfig& dc, int64_t num_shards, int64_t shard_id) {
  Plan plan;
  auto parts = ResolveDatasetParts(env, dc.path, dc.splits);
  if (!parts.ok()) return parts.status().WithContext(dc.loc.ToString() + ": dataset");
  plan.parts = std::move(*parts);
  for (const auto& part : plan.parts) {
    if (num_shards == 1) {
      plan.ranges.push_back(RowRange{0, UINT64_MAX});
      continue;
    }
    MMIRAGE_ASSIGN_OR_RETURN(uint64_t n, CountRows(env, part));
    plan.ranges.push_back(ShardRange(n, static_cast<uint64_t>(num_shards), static_cast<uint64_t>(shard_id)));
  }
  return plan;
}

// One row as the shard sees it: where it is, its raw object and its variables (or why it has none).
struct RowCtx {
  size_t dataset = 0, part = 0;
  uint64_t index = 0;
  std::string source;  // FILE:LINE
  Value row;
  Value vars;
  bool ok = true;
  RowError error;
};

// Calls fn(RowCtx&) for every row of the shard, dataset by dataset, part by part, in order. Rows that do not
// parse or extract come with ok=false.
template <typename Fn>
Status ForEachRow(Env* env, const config::Config& config, int64_t shard_id, Fn&& fn, bool per_dataset_hooks,
                  const std::function<Status(size_t, const Plan&)>& begin_dataset = nullptr,
                  const std::function<Status(size_t)>& end_dataset = nullptr) {
  (void)per_dataset_hooks;
  for (size_t d = 0; d < config.loading.datasets.size(); ++d) {
    const auto& dc = config.loading.datasets[d];
    MMIRAGE_ASSIGN_OR_RETURN(Plan plan, PlanDataset(env, dc, config.loading.num_shards, shard_id));
    if (begin_dataset) MMIRAGE_TRY(begin_dataset(d, plan));
    RowTransform transform(&config, env, dc.image_base_path.value_or(""));
    transform.set_tag_bytes(dc.output_format != "jsonl");
    for (size_t p = 0; p < plan.parts.size(); ++p) {
      RowStream stream(env, plan.parts[p], plan.ranges[p]);
      RawRow raw;
      while (true) {
        if (StopRequested()) return Status::Unavailable("interrupted");
        MMIRAGE_ASSIGN_OR_RETURN(bool more, stream.Next(&raw));
        if (!more) break;
        RowCtx c;
        c.dataset = d;
        c.part = p;
        c.index = raw.index;
        c.source = *raw.file + ":" + std::to_string(raw.line);
        auto parsed = ParseJson(raw.text);
        if (!parsed.ok() || !parsed->is_object()) {
          c.ok = false;
          c.error = RowError{Stage::kRead, parsed.ok() ? std::string("row is a JSON ") + parsed->TypeName() +
                                                             ", expected an object"
                                                       : parsed.status().message()};
        } else {
          c.row = std::move(*parsed);
          auto vars = transform.Extract(c.row);
          if (!vars.ok) {
            c.ok = false;
            c.error = vars.error;
          } else {
            c.vars = std::move(vars.value);
          }
        }
        MMIRAGE_TRY(fn(c, transform));
      }
    }
    if (end_dataset) MMIRAGE_TRY(end_dataset(d));
  }
  return Status::OK();
}

// The stage of every output: 0 unless its prompt reads an earlier batch output, then one more than that one's.
std::vector<int64_t> OutputStages(const config::Config& config) {
  const auto& outs = config.processing.outputs;
  std::vector<int64_t> stage(outs.size(), 0);
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].prompt_tmpl) continue;
    for (const auto& name : outs[i].prompt_tmpl->UndeclaredVariables())
      for (size_t j = 0; j < i; ++j)
        if (outs[j].name == name) stage[i] = std::max(stage[i], stage[j] + 1);
  }
  return stage;
}

std::string CustomId(const config::OutputVar& o, const std::string& modality, int64_t shard, const RowCtx& c) {
  // Unique across outputs, shards, datasets and splits; the same on every retry; only [A-Za-z0-9_-] besides
  // the output name.
  return o.name + "-" + modality + "-s" + std::to_string(shard) + "-d" + std::to_string(c.dataset) + "p" +
         std::to_string(c.part) + "-r" + std::to_string(c.index);
}

// The value an answer gives its output, or the row error.
Result<Value> AnswerValue(const config::OutputVar& o, const BatchAnswer& a) {
  if (!a.ok) return Status::Unavailable("provider error: " + a.error);
  std::string text = Strip(a.text);
  if (!o.json || o.schema.empty()) {
    if (o.json) {  // JSON without a schema: any JSON object
      auto v = ParseJson(text);
      if (!v.ok() || !v->is_object()) return Status::InvalidArgument("output is not a JSON object: " + text.substr(0, 200));
      return *v;
    }
    return Value(text);
  }
  return process::CheckJsonOutput(text, o.schema);
}

class BatchShard {
 public:
  explicit BatchShard(const BatchShardOptions& o)
      : o_(o), env_(o.env), config_(*o.config), state_(o.env, o.config->loading.state_dir, o.shard_id),
        proc_(o.config->FindProcessor("batch_api")), stages_(OutputStages(*o.config)), run_id_(RandomRunId()) {}

  Result<BatchShardReport> Run();

 private:
  Status Validate() const;
  Status Export();
  Status SubmitStage(int64_t stage);
  Status Emit(process::RequestChunk chunk, const std::string& modality, int64_t stage, const std::string& reason,
              Value snapshot);
  // recovering: the chunk was journaled by an earlier run that may have sent it; ask the provider first.
  Status SubmitJournaled(JournalChunk* c, bool recovering);
  Status WriteReceipt(JournalChunk* c, const std::vector<int64_t>& source_indices);
  // Polls every submitted chunk; downloads finished ones. Returns whether all are done.
  Result<bool> Poll(BatchShardReport* report);
  Status LoadAnswers();
  Result<bool> ResubmitFailed();
  Status Publish(BatchShardReport* report);
  Value BatchInfo(const BatchShardReport& r) const;
  // Fills `vars` with the outputs of stages below `stage` from the answers; false (with *err) when one failed.
  // *missing: the first failed output has no answer at all (it was never submitted: its prompt failed).
  bool ApplyAnswers(RowCtx& c, int64_t stage, RowError* err, int64_t* in_tokens, int64_t* out_tokens,
                    int64_t* missing = nullptr) const;
  std::string ResultsPath(const JournalChunk& c) const { return JoinPath(JoinPath(journal_->dir(), "results"), c.name + ".jsonl"); }
  int64_t NumStages() const {
    int64_t n = 0;
    for (int64_t s : stages_) n = std::max(n, s + 1);
    return n;
  }

  const BatchShardOptions& o_;
  Env* env_;
  const config::Config& config_;
  ShardState state_;
  const config::Processor* proc_;
  std::vector<int64_t> stages_;
  std::string run_id_;
  std::unique_ptr<BatchJournal> journal_;
  std::unique_ptr<process::BatchProvider> provider_;
  // Stage submission: counters and accumulators per modality.
  std::map<std::string, int64_t> chunk_counter_;
  std::string export_path_;
  std::unordered_map<std::string, BatchAnswer> answers_;     // custom_id → latest answer
  std::unordered_map<std::string, std::string> ended_;       // custom_id → why no answer (batch ended)
  std::unordered_map<std::string, int64_t> source_index_of_;  // pending chunk: custom_id → source index
  uint64_t start_us_ = 0;                                    // this call's start (runtime of the publication)
};

Status BatchShard::Validate() const {
  if (proc_ == nullptr) return Status::InvalidArgument("batch_api processor requires a provider configuration");
  for (const auto& out : config_.processing.outputs) {
    if (out.type != "batch_api") {
      return Status::InvalidArgument(out.loc.ToString() + ": output '" + out.name + "' is of type '" + out.type +
                                     "': a config with batch_api outputs can only have batch_api outputs in this "
                                     "build");
    }
  }
  return Status::OK();
}

Status BatchShard::Export() {
  const std::string& p = o_.export_prompts;
  if (Strip(p).empty()) return Status::InvalidArgument("export_prompts_dir is set but empty; give it a path or leave it unset");
  export_path_ = p.size() >= 6 && p.compare(p.size() - 6, 6, ".jsonl") == 0
                     ? p.substr(0, p.size() - 6) + "." + run_id_ + ".jsonl"
                     : JoinPath(p, "exported_prompts." + run_id_ + ".jsonl");
  size_t slash = export_path_.rfind('/');
  Status s = slash == std::string::npos ? Status::OK() : env_->CreateDirs(export_path_.substr(0, slash));
  if (s.ok()) {
    auto f = env_->NewWritableFile(export_path_, /*append=*/true);
    s = f.ok() ? (*f)->Close() : f.status();
  }
  if (!s.ok()) return Status::IOError("Cannot write exported prompts to " + export_path_ + ": " + s.message());
  return SubmitStage(0);
}

Status BatchShard::Emit(process::RequestChunk chunk, const std::string& modality, int64_t stage,
                        const std::string& reason, Value snapshot) {
  int64_t n = ++chunk_counter_[modality];
  JournalChunk c;
  c.chunk_id = "chunk-" + Pad6(n);
  c.name = modality + "-" + c.chunk_id;
  c.modality = modality;
  c.stage = stage;
  c.bytes = chunk.total_bytes;
  c.oversized = chunk.has_oversized_request;
  c.flush_reason = reason;
  c.snapshot = std::move(snapshot);
  // request_hash: the requests serialised with sorted keys.
  Value list = Value::EmptyArray();
  std::string lines;
  std::vector<int64_t> sources;
  for (const auto& r : chunk.requests) {
    auto v = ParseJson(r.line);
    if (!v.ok()) return Status::Internal("request line does not parse back");
    list.Push(std::move(*v));
    if (!lines.empty()) lines.push_back('\n');
    lines += r.line;
    sources.push_back(source_index_of_[r.custom_id]);
  }
  c.hash = process::Sha256Hex(process::PyJson(list, /*compact=*/true, /*sort_keys=*/true));
  if (!export_path_.empty()) {
    std::string out;
    for (const Value& req : list.as_array()) {
      Value row = Value::EmptyObject();
      row.Set("batch_id", c.name);
      row.Set("request", req);
      out += process::PyJson(row, /*compact=*/false) + "\n";
    }
    MMIRAGE_ASSIGN_OR_RETURN(auto f, env_->NewWritableFile(export_path_, /*append=*/true));
    MMIRAGE_TRY(f->Append(out));
    MMIRAGE_TRY(f->Close());
    c.batch_id = "dry-run-" + c.name;
    c.submit_status = "dry_run";
    c.submitted_at = UtcIsoNow(env_);
    for (const auto& r : chunk.requests) c.requests.push_back(JournalRequest{r.custom_id, 0, 0, 0, 0});
    return WriteReceipt(&c, sources);
  }
  for (const auto& r : chunk.requests) {
    int64_t t = r.tag;  // dataset << 48 | part << 40 | output … packed by the caller
    c.requests.push_back(JournalRequest{r.custom_id, (t >> 48) & 0xffff, (t >> 40) & 0xff, t & 0xffffffffff, 0});
  }
  if (JournalChunk* prev = journal_->Find(c.name)) {
    if (prev->hash != c.hash) {
      return Status::InvalidArgument("chunk " + c.name + " differs from the one journaled in " + journal_->dir() +
                                     ": the data or the config changed since the shard's batches were submitted");
    }
    if (!prev->batch_id) MMIRAGE_TRY(SubmitJournaled(prev, /*recovering=*/true));
    if (!prev->receipt) MMIRAGE_TRY(WriteReceipt(prev, sources));
    return Status::OK();
  }
  c.file = c.name + ".requests.jsonl";
  c.key = journal_->journal_id() + "-s" + std::to_string(o_.shard_id) + "-" + c.name;
  MMIRAGE_TRY(WriteFileAtomically(env_, JoinPath(journal_->dir(), c.file), lines));
  MMIRAGE_TRY(journal_->Append(c.ToEvent()));
  JournalChunk* jc = journal_->Find(c.name);
  MMIRAGE_TRY(SubmitJournaled(jc, /*recovering=*/false));
  return WriteReceipt(jc, sources);
}

Status BatchShard::SubmitJournaled(JournalChunk* c, bool recovering) {
  std::string path = JoinPath(journal_->dir(), c->file);
  std::optional<std::string> found;
  if (recovering) {
    MMIRAGE_ASSIGN_OR_RETURN(found, provider_->FindSubmitted(c->key));
    if (!found && provider_->provider() == "openai") {
      // The earlier run may have died with its create request still in flight at the provider: give that
      // request time to land before looking again (a create takes well under a second).
      LOG_INFO("shard " << o_.shard_id << ": " << c->name << " was journaled but not recorded as submitted; "
               "looking it up again in " << kRecoveryGraceSeconds << " s");
      env_->SleepMicros(static_cast<uint64_t>(kRecoveryGraceSeconds * 1e6));
      MMIRAGE_ASSIGN_OR_RETURN(found, provider_->FindSubmitted(c->key));
    }
    if (!found && provider_->provider() == "anthropic") {
      LOG_WARN("shard " << o_.shard_id << ": " << c->name << " was journaled but its submission is not recorded; "
               "Anthropic keeps no metadata to look it up, so it is submitted again (it may be billed twice)");
    }
  }
  process::SubmitResult r;
  if (found) {
    LOG_INFO("shard " << o_.shard_id << ": " << c->name << " was already submitted as " << *found);
    r.batch_id = *found;
    r.status = "in_progress";
  } else {
    auto s = provider_->Submit(path, c->chunk_id, c->key);
    if (!s.ok()) return s.status().WithContext("shard " + std::to_string(o_.shard_id) + ", " + c->name);
    r = *s;
  }
  Value e = Value::EmptyObject();
  e.Set("event", "submitted");
  e.Set("name", c->name);
  e.Set("batch_id", r.batch_id);
  e.Set("status", r.status);
  e.Set("at", UtcIsoNow(env_));
  MMIRAGE_TRY(journal_->Append(e));
  LOG_INFO("shard " << o_.shard_id << ": submitted " << c->name << " (" << c->requests.size() << " requests, "
                    << c->bytes << " bytes) as " << r.batch_id);
  return Status::OK();
}

Status BatchShard::WriteReceipt(JournalChunk* c, const std::vector<int64_t>& sources) {
  const auto& bp = proc_->batch_api;
  if (bp.metadata_output_path.empty()) return Status::OK();
  std::string base = bp.metadata_output_path;
  if (base.size() >= 6 && base.compare(base.size() - 6, 6, ".jsonl") == 0) base.resize(base.size() - 6);
  std::string path = base + (export_path_.empty() ? "" : ".dry-run") + "." + c->modality + "." + run_id_ + ".jsonl";
  Value map = Value::EmptyObject();
  for (size_t i = 0; i < c->requests.size(); ++i) {
    int64_t src = i < sources.size() ? sources[i] : static_cast<int64_t>(c->requests[i].row);
    map.Set(c->requests[i].custom_id, src);
  }
  Value r = Value::EmptyObject();
  r.Set("provider", bp.provider);
  r.Set("chunk_id", c->chunk_id);
  r.Set("provider_batch_id", c->batch_id.value_or(""));
  r.Set("status", c->submit_status);
  r.Set("custom_id_to_source_index", map);
  r.Set("request_hash", c->hash);
  r.Set("model_params_snapshot", c->snapshot);
  r.Set("submitted_request_count", static_cast<int64_t>(c->requests.size()));
  r.Set("total_bytes", c->bytes);
  r.Set("has_oversized_request", c->oversized);
  r.Set("flush_reason", c->flush_reason);
  r.Set("submitted_at_utc", c->submitted_at);
  if (export_path_.empty()) r.Set("shard_id", o_.shard_id);  // extension: which shard's journal holds it
  size_t slash = path.rfind('/');
  if (slash != std::string::npos) MMIRAGE_TRY(env_->CreateDirs(path.substr(0, slash)));
  MMIRAGE_ASSIGN_OR_RETURN(auto f, env_->NewWritableFile(path, /*append=*/true));
  MMIRAGE_TRY(f->Append(process::PyJson(r, /*compact=*/false) + "\n"));
  MMIRAGE_TRY(f->Sync());
  MMIRAGE_TRY(f->Close());
  if (!export_path_.empty()) return Status::OK();
  Value e = Value::EmptyObject();
  e.Set("event", "receipt");
  e.Set("name", c->name);
  return journal_->Append(e);
}

bool BatchShard::ApplyAnswers(RowCtx& c, int64_t stage, RowError* err, int64_t* in_tokens, int64_t* out_tokens,
                              int64_t* missing) const {
  const auto& outs = config_.processing.outputs;
  bool has_images = false;
  for (const auto& in : config_.processing.inputs) {
    const Value* v = in.image ? c.vars.Find(in.name) : nullptr;
    has_images |= v != nullptr && !v->is_null();
  }
  bool ok = true;  // every output's tokens are counted, also after a failed one (they were billed)
  for (size_t i = 0; i < outs.size(); ++i) {
    if (stages_[i] >= stage) continue;
    std::string id = CustomId(outs[i], has_images ? "multimodal" : "text", o_.shard_id, c);
    if (proc_->batch_api.provider == "anthropic") {
      auto n = process::NormalizeAnthropicCustomId(id);
      if (n.ok()) id = *n;
    }
    auto it = answers_.find(id);
    if (it == answers_.end()) {
      auto e = ended_.find(id);
      if (ok) {
        *err = RowError{Stage::kGenerate, "output '" + outs[i].name + "': " +
                                              (e != ended_.end() ? e->second : "no result from the provider")};
        if (missing && e == ended_.end()) *missing = static_cast<int64_t>(i);
      }
      ok = false;
      continue;
    }
    if (it->second.input_tokens) *in_tokens += *it->second.input_tokens;
    if (it->second.output_tokens) *out_tokens += *it->second.output_tokens;
    if (!ok) continue;
    auto v = AnswerValue(outs[i], it->second);
    if (!v.ok()) {
      *err = RowError{Stage::kGenerate, "output '" + outs[i].name + "': " + v.status().message()};
      ok = false;
      continue;
    }
    c.vars.Set(outs[i].name, std::move(*v));
  }
  return ok;
}

Status BatchShard::SubmitStage(int64_t stage) {
  const auto& bp = proc_->batch_api;
  process::ChunkLimits limits{bp.max_chunk_bytes, bp.max_requests_per_chunk, bp.oversized_request_policy == "reject"};
  std::map<std::string, process::BatchAccumulator> acc;
  acc.emplace("text", process::BatchAccumulator(limits));
  acc.emplace("multimodal", process::BatchAccumulator(limits));
  chunk_counter_.clear();
  if (journal_) {
    for (const auto& c : journal_->chunks())
      if (c.stage < stage) ++chunk_counter_[c.modality];
  }
  const auto& outs = config_.processing.outputs;
  const int64_t batch_size = std::max<int64_t>(1, config_.loading.batch_size);
  // Rows are handled in batches of batch_size, each output over the batch, text rows then multimodal rows: the
  // original's flush cadence, so that chunk boundaries and the export's order are the same.
  std::vector<RowCtx> batch;
  auto flush_group = [&](const std::string& modality, const Value& snapshot) -> Status {
    for (auto& ch : acc.at(modality).TakeReady())
      MMIRAGE_TRY(Emit(std::move(ch), modality, stage, "full_chunk", snapshot));
    return Status::OK();
  };
  auto run_batch = [&]() -> Status {
    // Answers of earlier stages first.
    for (auto& c : batch) {
      if (!c.ok) continue;
      RowError err;
      int64_t a = 0, b = 0;
      if (!ApplyAnswers(c, stage, &err, &a, &b)) c.ok = false;
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      if (stages_[i] != stage) continue;
      const auto& o = outs[i];
      for (const char* modality : {"text", "multimodal"}) {
        bool added = false;
        for (auto& c : batch) {
          if (!c.ok) continue;
          std::vector<std::string> images;
          bool has_images = false;
          std::vector<const config::InputVar*> image_inputs;
          for (const auto& in : config_.processing.inputs)
            if (in.image && c.vars.Find(in.name) != nullptr && !c.vars.Find(in.name)->is_null())
              image_inputs.push_back(&in);
          std::sort(image_inputs.begin(), image_inputs.end(),
                    [](const config::InputVar* a, const config::InputVar* b) { return a->name < b->name; });
          for (const auto* in : image_inputs) {
            has_images = true;
            const Value* v = c.vars.Find(in->name);
            if (v->is_string()) {
              images.push_back(v->as_string());
            } else if (v->is_bytes()) {  // image bytes from a binary column: inlined as a data: URI
              const std::string& b = v->as_bytes();
              const char* mime = b.rfind("\xff\xd8", 0) == 0           ? "image/jpeg"
                                 : b.rfind("GIF8", 0) == 0               ? "image/gif"
                                 : b.size() > 12 && b.compare(8, 4, "WEBP") == 0 ? "image/webp"
                                                                          : "image/png";
              std::string uri = std::string("data:") + mime + ";base64,";
              AppendBase64(v->as_bytes(), &uri);
              images.push_back(std::move(uri));
            } else {
              images.push_back(process::PyJson(*v, true));
            }
          }
          if ((std::string(modality) == "multimodal") != has_images) continue;
          auto prompt = o.prompt_tmpl->Render(c.vars);
          if (!prompt.ok()) continue;  // a row error at publication
          process::BatchPrompt bp_in;
          bp_in.custom_id = CustomId(o, modality, o_.shard_id, c);
          bp_in.prompt = std::move(*prompt);
          bp_in.images = std::move(images);
          if (o.json)
            for (const auto& f : o.schema) bp_in.expected_schema.push_back(f.name);
          auto req = process::BuildBatchRequest(bp, env_, bp_in);
          if (!req.ok()) return req.status().WithContext(c.source + ": output '" + o.name + "'");
          process::PendingRequest pr;
          pr.line = process::PyJson(*req, /*compact=*/true);
          pr.custom_id = req->Find("custom_id")->as_string();
          pr.tag = (static_cast<int64_t>(c.dataset) << 48) | (static_cast<int64_t>(c.part) << 40) |
                   static_cast<int64_t>(c.index & 0xffffffffffull);
          source_index_of_[pr.custom_id] = static_cast<int64_t>(c.index);
          Status s = acc.at(modality).Add(std::move(pr));
          if (!s.ok()) return s.WithContext(c.source + ": output '" + o.name + "'");
          added = true;
        }
        if (added) {
          Value snap = Value::EmptyObject();
          snap.Set("output_name", o.name);
          snap.Set("output_type", o.output_type);
          snap.Set("modality", modality);
          MMIRAGE_TRY(flush_group(modality, snap));
        }
      }
    }
    batch.clear();
    return Status::OK();
  };
  // The original maps each dataset on its own and finalizes (flushes both accumulators) after each.
  auto finalize = [&](size_t) -> Status {
    if (!batch.empty()) MMIRAGE_TRY(run_batch());
    for (const char* modality : {"text", "multimodal"}) {
      Value snap = Value::EmptyObject();
      snap.Set("modality", modality);
      snap.Set("phase", "finalize");
      for (auto& ch : acc.at(modality).TakeAll())
        MMIRAGE_TRY(Emit(std::move(ch), modality, stage, "finalize", snap));
    }
    return Status::OK();
  };
  MMIRAGE_TRY(ForEachRow(env_, config_, o_.shard_id,
                         [&](RowCtx& c, const RowTransform&) -> Status {
                           if (!batch.empty() && batch.back().part != c.part) MMIRAGE_TRY(run_batch());
                           batch.push_back(std::move(c));
                           if (static_cast<int64_t>(batch.size()) >= batch_size) return run_batch();
                           return Status::OK();
                         },
                         false, nullptr, finalize));
  if (!export_path_.empty()) return Status::OK();
  Value e = Value::EmptyObject();
  e.Set("event", "sealed");
  e.Set("stage", stage);
  return journal_->Append(e);
}

Result<bool> BatchShard::Poll(BatchShardReport* report) {
  report->batches_total = report->batches_done = report->batches_failed = 0;
  report->requests_total = report->requests_done = 0;
  bool all_done = true;
  MMIRAGE_TRY(env_->CreateDirs(JoinPath(journal_->dir(), "results")));
  for (auto& c : journal_->chunks()) {
    if (!c.batch_id) continue;
    ++report->batches_total;
    int64_t n = static_cast<int64_t>(c.requests.size());
    report->requests_total += n;
    if (env_->FileExists(ResultsPath(c))) {
      ++report->batches_done;
      if (c.ended) ++report->batches_failed;
      report->requests_done += n;
      continue;
    }
    MMIRAGE_ASSIGN_OR_RETURN(process::BatchStatus st, provider_->GetStatus(*c.batch_id));
    if (st.status == "completed" || st.status == "failed") {
      if (st.status == "failed") {
        LOG_WARN("shard " << o_.shard_id << ": batch " << *c.batch_id << " (" << c.name << ") ended with status '"
                          << st.raw_status << "'; its requests without a result become row errors");
        Value e = Value::EmptyObject();
        e.Set("event", "ended");
        e.Set("name", c.name);
        e.Set("status", st.raw_status);
        MMIRAGE_TRY(journal_->Append(e));
        ++report->batches_failed;
      }
      if (st.status == "failed" && st.output_file_id.empty() && st.error_file_id.empty()) {
        MMIRAGE_TRY(WriteFileAtomically(env_, ResultsPath(c), ""));
      } else {
        MMIRAGE_TRY(provider_->DownloadResults(*c.batch_id, st, ResultsPath(c)));
      }
      ++report->batches_done;
      report->requests_done += n;
      continue;
    }
    all_done = false;
    report->requests_done += std::min(n, st.requests_done);
  }
  return all_done;
}

Status BatchShard::LoadAnswers() {
  answers_.clear();
  ended_.clear();
  for (const auto& c : journal_->chunks()) {  // journal order: a resubmitted request's later answer wins
    if (!c.batch_id || !env_->FileExists(ResultsPath(c))) continue;
    std::unordered_map<std::string, bool> in_chunk;
    for (const auto& r : c.requests) in_chunk[r.custom_id] = true;
    MMIRAGE_ASSIGN_OR_RETURN(auto reader, LineReader::Open(env_, ResultsPath(c)));
    std::string_view line;
    int64_t line_no = 0;
    while (true) {
      MMIRAGE_ASSIGN_OR_RETURN(bool more, reader->Next(&line));
      if (!more) break;
      ++line_no;
      if (IsBlankLine(line)) continue;
      auto a = process::ParseBatchAnswer(proc_->batch_api.provider, line);
      if (!a.ok()) {
        LOG_WARN(ResultsPath(c) << ":" << line_no << ": " << a.status().message() << "; skipped");
        continue;
      }
      if (!in_chunk.count(a->custom_id)) continue;
      answers_[a->custom_id] = std::move(*a);
    }
    if (c.ended) {
      for (const auto& r : c.requests)
        if (!answers_.count(r.custom_id))
          ended_[r.custom_id] = "batch " + *c.batch_id + " ended with status '" + *c.ended + "' without a result";
    }
  }
  return Status::OK();
}

Result<bool> BatchShard::ResubmitFailed() {
  // Requests whose latest answer is a provider failure (or that have none in an ended batch).
  std::vector<std::pair<const JournalChunk*, JournalRequest>> failed;
  std::unordered_map<std::string, bool> seen;
  for (auto it = journal_->chunks().rbegin(); it != journal_->chunks().rend(); ++it) {
    for (const auto& r : it->requests) {
      if (seen.count(r.custom_id)) continue;
      seen[r.custom_id] = true;
      auto a = answers_.find(r.custom_id);
      bool bad = a == answers_.end() ? ended_.count(r.custom_id) > 0 : !a->second.ok;
      if (bad) failed.push_back({&*it, r});
    }
  }
  if (failed.empty()) return false;
  const auto& bp = proc_->batch_api;
  process::ChunkLimits limits{bp.max_chunk_bytes, bp.max_requests_per_chunk, false};
  std::map<std::string, process::BatchAccumulator> acc;
  acc.emplace("text", process::BatchAccumulator(limits));
  acc.emplace("multimodal", process::BatchAccumulator(limits));
  std::map<std::string, std::string> lines;  // file → content cache
  for (const auto& [c, r] : failed) {
    std::string& content = lines[c->file];
    if (content.empty()) {
      MMIRAGE_ASSIGN_OR_RETURN(content, env_->ReadFileToString(JoinPath(journal_->dir(), c->file)));
    }
    size_t i = 0;
    for (; i < c->requests.size(); ++i)
      if (c->requests[i].custom_id == r.custom_id) break;
    size_t pos = 0;
    for (size_t k = 0; k < i; ++k) pos = content.find('\n', pos) + 1;
    size_t end = content.find('\n', pos);
    process::PendingRequest pr;
    pr.line = content.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pr.custom_id = r.custom_id;
    pr.tag = (r.dataset << 48) | (r.part << 40) | static_cast<int64_t>(r.row & 0xffffffffffull);
    source_index_of_[r.custom_id] = static_cast<int64_t>(r.row);
    MMIRAGE_TRY(acc.at(c->modality).Add(std::move(pr)));
  }
  chunk_counter_.clear();
  for (const auto& c : journal_->chunks()) ++chunk_counter_[c.modality];
  int64_t stage = NumStages();  // after every stage: the chunk names continue
  for (const char* modality : {"text", "multimodal"}) {
    Value snap = Value::EmptyObject();
    snap.Set("modality", modality);
    snap.Set("phase", "resubmit_failed");
    for (auto& ch : acc.at(modality).TakeAll()) MMIRAGE_TRY(Emit(std::move(ch), modality, stage, "resubmit_failed", snap));
  }
  LOG_INFO("shard " << o_.shard_id << ": resubmitted " << failed.size() << " failed request(s)");
  return true;
}

Status BatchShard::Publish(BatchShardReport* report) {
  const auto& ex = config_.execution;
  std::unique_ptr<ShardWriter> writer;
  int64_t in_total = 0, out_total = 0;
  int64_t final_stage = NumStages();
  std::string usage;
  std::vector<std::string> error_files;
  auto begin = [&](size_t d, const Plan& plan) -> Status {
    std::vector<std::string> splits;
    for (const auto& part : plan.parts) splits.push_back(part.split);
    ShardWriterOptions wo{config_.loading.datasets[d].output_dir, o_.shard_id, splits,
                          DatasetFingerprint(config_, d, o_.shard_id)};
    wo.output_format = *ParseOutputFormat(config_.loading.datasets[d].output_format);  // validated at load
    MMIRAGE_ASSIGN_OR_RETURN(writer, ShardWriter::Open(env_, wo));
    if (writer->resumed()) {  // publishing is cheap to redo from the answers: start over
      writer->Discard();
      MMIRAGE_ASSIGN_OR_RETURN(writer, ShardWriter::Open(env_, wo));
    }
    return Status::OK();
  };
  auto end = [&](size_t) -> Status {
    MMIRAGE_TRY(writer->AddUsage(usage));
    usage.clear();
    report->rows_written += writer->rows_written();
    report->rows_failed += writer->rows_failed();
    if (writer->rows_failed() > 0) error_files.push_back(JoinPath(writer->final_dir(), "errors.jsonl"));
    Status s = writer->Finish();
    writer.reset();
    return s;
  };
  std::string line;
  MMIRAGE_TRY(ForEachRow(env_, config_, o_.shard_id,
                         [&](RowCtx& c, const RowTransform& t) -> Status {
                           writer->Advance(c.part, 1);
                           if (!c.ok) return writer->AddError(c.part, c.index, c.source, c.error);
                           RowError err;
                           int64_t a = 0, b = 0;
                           int64_t missing = -1;
                           bool ok = ApplyAnswers(c, final_stage, &err, &a, &b, &missing);
                           if (a > 0 || b > 0) {
                             in_total += a;
                             out_total += b;
                             usage += "{\"row_index\":" + std::to_string(c.index) + ",\"prompt_tokens\":" +
                                      std::to_string(a) + ",\"completion_tokens\":" + std::to_string(b) +
                                      ",\"generations\":1}\n";
                           }
                           if (!ok) {
                             // A prompt that fails to render was never submitted: say so, not "no result".
                             if (missing >= 0) {
                               auto p = t.RenderPrompt(static_cast<size_t>(missing), c.vars);
                               if (!p.ok) err = p.error;
                             }
                             return writer->AddError(c.part, c.index, c.source, err);
                           }
                           line.clear();
                           auto r = t.RenderOutputJson(c.row, c.vars, &line);
                           if (!r.ok) return writer->AddError(c.part, c.index, c.source, r.error);
                           line.push_back('\n');
                           return writer->AddSerialized(c.part, line, 1);
                         },
                         true, begin, end));
  ShardStats stats;
  stats.rows_processed = report->rows_written;
  if (in_total > 0) stats.input_tokens = in_total;
  if (out_total > 0) stats.output_tokens = out_total;
  stats.num_gpus = 0;
  stats.runtime_seconds = RoundTo(static_cast<double>(env_->MonotonicMicros() - start_us_) / 1e6, 3);
  const auto& bp = proc_->batch_api;
  if (bp.price_per_million_input_tokens || bp.price_per_million_output_tokens) {
    stats.cost = RoundTo(static_cast<double>(in_total) / 1e6 * bp.price_per_million_input_tokens.value_or(0) +
                             static_cast<double>(out_total) / 1e6 * bp.price_per_million_output_tokens.value_or(0),
                         6);
  }
  Value sv = stats.ToValue();
  if (report->rows_failed > ex.max_failed_rows) {
    std::string where;
    for (const auto& f : error_files) where += (where.empty() ? "" : ", ") + f;
    return Status::InvalidArgument(std::to_string(report->rows_failed) + " row(s) failed (max_failed_rows=" +
                                   std::to_string(ex.max_failed_rows) + "); see " + where);
  }
  return state_.MarkSuccess(sv, report->rows_failed);
}

Value BatchShard::BatchInfo(const BatchShardReport& r) const {
  Value v = Value::EmptyObject();
  v.Set("provider", proc_->batch_api.provider);
  v.Set("batches_total", r.batches_total);
  v.Set("batches_completed", r.batches_done - r.batches_failed);
  v.Set("batches_failed", r.batches_failed);
  v.Set("batches_in_progress", r.batches_total - r.batches_done);
  v.Set("requests_total", r.requests_total);
  v.Set("requests_done", r.requests_done);
  v.Set("journal", journal_ ? JoinPath(journal_->dir(), "journal.jsonl") : "");
  return v;
}

Result<BatchShardReport> BatchShard::Run() {
  BatchShardReport report;
  start_us_ = env_->MonotonicMicros();
  MMIRAGE_TRY(Validate());
  if (!o_.export_prompts.empty()) {
    if (NumStages() > 1) {
      LOG_WARN("--export-prompts: outputs whose prompt reads another batch output are not exported (their "
               "requests need that output's answers)");
    }
    MMIRAGE_TRY(Export());
    report.outcome = BatchOutcome::kExported;
    report.export_path = export_path_;
    return report;
  }
  config::EnvLookup lookup = o_.env_lookup ? o_.env_lookup : config::ProcessEnvLookup();
  MMIRAGE_ASSIGN_OR_RETURN(provider_, process::BatchProvider::Create(proc_->batch_api, lookup, env_,
                                                                     o_.retry_base_seconds));
  MMIRAGE_ASSIGN_OR_RETURN(journal_, BatchJournal::Open(env_, JoinPath(state_.dir(), "batch")));
  bool fresh = !journal_->fingerprint().has_value();
  if (!fresh && *journal_->fingerprint() != config_.fingerprint) {
    return Status::InvalidArgument("the config changed since shard " + std::to_string(o_.shard_id) +
                                   "'s batches were submitted (journal " + journal_->dir() +
                                   "/journal.jsonl); restore it, or remove that directory to start over");
  }
  auto fail = [&](const Status& s) -> Status {
    Status m = state_.MarkFailed(s.message(), report.rows_failed);
    if (!m.ok()) LOG_ERROR("cannot record the failure in the state directory: " << m.message());
    return s;
  };
  bool wait = o_.wait.value_or(proc_->batch_api.wait);
  if (!fresh && !o_.resubmit_failed && state_.Read().status == "success" && journal_->sealed(NumStages() - 1)) {
    LOG_INFO("shard " << o_.shard_id << ": already complete; kept");
    report.outcome = BatchOutcome::kComplete;
    return report;
  }
  const int64_t stages = NumStages();
  if (fresh) {
    if (o_.collect_only) {
      return Status::InvalidArgument("shard " + std::to_string(o_.shard_id) +
                                     " has no submitted batches; run `mmirage run` first");
    }
    ShardState::RunInfo info;
    Value ds = Value::EmptyArray();
    for (const auto& d : config_.loading.datasets) {
      Value x = Value::EmptyObject();
      x.Set("image_base_path", d.image_base_path ? Value(*d.image_base_path) : Value());
      x.Set("output_dir", d.output_dir);
      ds.Push(x);
    }
    info.datasets = ds;
    info.slurm_job_id = o_.slurm_job_id;
    info.slurm_array_task_id = o_.slurm_array_task_id;
    MMIRAGE_TRY(state_.MarkRunning(info).status());
    Value e = Value::EmptyObject();
    e.Set("event", "start");
    e.Set("fingerprint", std::to_string(config_.fingerprint));
    e.Set("id", RandomRunId() + RandomRunId());  // batch keys of this journal only, not of a removed one
    Status s = journal_->Append(e);
    if (!s.ok()) return fail(s);
  }
  bool submitted_now = false;
  while (true) {
    int64_t stage = 0;
    while (stage < stages && journal_->sealed(stage)) ++stage;
    if (stage < stages) {
      if (stage > 0) {  // the earlier stages' answers must all be in
        auto done = Poll(&report);
        if (!done.ok()) return fail(done.status());
        if (!*done) goto in_progress;
        Status s = LoadAnswers();
        if (!s.ok()) return fail(s);
      } else if (o_.collect_only && !fresh && journal_->chunks().empty()) {
        return Status::InvalidArgument("shard " + std::to_string(o_.shard_id) + " has no submitted batches");
      }
      if (!fresh && stage == 0) LOG_INFO("shard " << o_.shard_id << ": resuming the submission");
      if (stage > 0 || !fresh) MMIRAGE_TRY(state_.MarkRunning({}).status());
      Status s = SubmitStage(stage);
      if (!s.ok()) return fail(s);
      submitted_now = stage == 0;
      fresh = false;
      continue;
    }
    {
      auto done = Poll(&report);
      if (!done.ok()) return fail(done.status());
      if (!*done) goto in_progress;
      Status s = LoadAnswers();
      if (!s.ok()) return fail(s);
      if (o_.resubmit_failed) {
        auto again = ResubmitFailed();
        if (!again.ok()) return fail(again.status());
        if (*again) {
          auto d2 = Poll(&report);
          if (!d2.ok()) return fail(d2.status());
          goto in_progress;
        }
      }
      s = Publish(&report);
      if (!s.ok()) return fail(s);
      report.outcome = BatchOutcome::kComplete;
      LOG_INFO("Shard " << o_.shard_id << " done: " << report.rows_written << " rows written, " << report.rows_failed
                        << " failed (" << report.batches_total << " batches, " << report.requests_total
                        << " requests)");
      return report;
    }
  in_progress:
    {
      Status m = state_.MarkSubmitted(BatchInfo(report));
      if (!m.ok()) return m;
    }
    LOG_INFO("shard " << o_.shard_id << ": " << report.requests_done << "/" << report.requests_total
                      << " requests done, " << report.batches_done << "/" << report.batches_total << " batches");
    if (!wait) {
      report.outcome = submitted_now ? BatchOutcome::kSubmitted : BatchOutcome::kInProgress;
      return report;
    }
    int64_t secs = std::max<int64_t>(0, proc_->batch_api.poll_interval_seconds);
    for (int64_t i = 0; i < secs * 10 && !StopRequested(); ++i) env_->SleepMicros(100000);
    if (StopRequested()) {
      report.outcome = BatchOutcome::kInProgress;
      return report;
    }
  }
}

}  // namespace

bool IsBatchConfig(const config::Config& config) {
  for (const auto& o : config.processing.outputs)
    if (o.type == "batch_api") return true;
  return false;
}

Result<std::vector<SubmittedBatch>> ListSubmittedBatches(Env* env, const config::Config& config) {
  std::vector<SubmittedBatch> out;
  for (int64_t id = 0; id < config.loading.num_shards; ++id) {
    ShardState st(env, config.loading.state_dir, id);
    std::string dir = JoinPath(st.dir(), "batch");
    if (!env->FileExists(JoinPath(dir, "journal.jsonl"))) continue;
    MMIRAGE_ASSIGN_OR_RETURN(auto j, BatchJournal::Open(env, dir));
    for (const auto& c : j->chunks())
      if (c.batch_id) out.push_back(SubmittedBatch{id, c.name, *c.batch_id, static_cast<int64_t>(c.requests.size())});
  }
  return out;
}

Result<BatchShardReport> RunBatchShard(const BatchShardOptions& options) {
  BatchShard shard(options);
  return shard.Run();
}

}  // namespace mmirage::pipeline
