// The sample: every dataset, split and shard has at least one row, the rest in proportion to row counts, evenly
// spaced inside each shard. Prompt tokens are counted with a vocab-only GGUF load. The sample runs on a copy of the
// config pointing at a temporary directory, with the cache off, to measure output tokens per row and speed at the
// configured parallelism; totals are extrapolated from the sample's spread.

#include "exec/estimate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "data/dataset.h"
#include "data/json.h"
#include "engine/llama_tokenizer.h"
#include "pipeline/row_transform.h"
#include "pipeline/shard_runner.h"
#include "process/cache_key.h"
#include "process/llm/engine_factory.h"
#include "process/llm/llm_options.h"
#include "process/llm/model_ref.h"
#include "process/llm/pricing.h"
#include "stats/shard_stats.h"
#include "util/log.h"

namespace mmirage::exec {
namespace {

constexpr uint64_t kExactCountBytes = 2ull << 30;  // plain JSONL above this: rows estimated from file size
constexpr uint64_t kSizeProbeRows = 20000;

// One (dataset, part, shard) block of rows; every non-empty cell gets at least one sampled row.
struct Cell {
  size_t dataset = 0, part = 0;
  int64_t shard = 0;
  RowRange range;
};

struct SampleRow {
  size_t dataset = 0;
  double weight = 1;            // rows of the population it stands for
  std::string text;             // the raw JSON line
  int64_t tokenizer_input = 0;  // prompt tokens, counted (placeholders for earlier outputs)
  bool render_failed = false;
};

bool IsCompressed(const std::string& f) {
  auto ends = [&](const char* s) {
    std::string_view v(s);
    return f.size() >= v.size() && f.compare(f.size() - v.size(), v.size(), v) == 0;
  };
  return ends(".gz") || ends(".zst");
}

// Rows of a part: counted, or for a huge plain JSONL part estimated from its size and its first rows.
Result<uint64_t> PartRows(Env* env, const DatasetPart& part, bool* exact, std::string* note) {
  uint64_t bytes = 0;
  bool compressed = false;
  for (const auto& f : part.files) {
    MMIRAGE_ASSIGN_OR_RETURN(uint64_t size, env->GetFileSize(f));
    bytes += size;
    compressed = compressed || IsCompressed(f);
  }
  if (compressed || bytes <= kExactCountBytes) return CountRows(env, part);
  RowStream probe(env, part, RowRange{0, kSizeProbeRows});
  RawRow raw;
  uint64_t rows = 0, row_bytes = 0;
  while (true) {
    MMIRAGE_ASSIGN_OR_RETURN(bool more, probe.Next(&raw));
    if (!more) break;
    ++rows;
    row_bytes += raw.text.size() + 1;
  }
  if (rows < kSizeProbeRows) return CountRows(env, part);
  *exact = false;
  double per_row = static_cast<double>(row_bytes) / static_cast<double>(rows);
  *note = "the rows of " + part.files.front() + (part.files.size() > 1 ? " (and the other files of its part)" : "") +
          " were estimated from its size (" + FormatDouble(std::round(per_row)) + " bytes per row over its first " +
          std::to_string(rows) + " rows)";
  return static_cast<uint64_t>(std::llround(static_cast<double>(bytes) / per_row));
}

// Sampled row indices of a cell: k of them, evenly spaced (the middle of k equal blocks).
std::vector<uint64_t> SpreadIndices(const RowRange& r, int64_t k) {
  std::vector<uint64_t> out;
  for (int64_t i = 0; i < k; ++i) {
    double pos = (static_cast<double>(i) + 0.5) * static_cast<double>(r.size()) / static_cast<double>(k);
    out.push_back(r.begin + std::min<uint64_t>(r.size() - 1, static_cast<uint64_t>(pos)));
  }
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Value Placeholder(const config::OutputVar& o) {
  if (o.json && !o.schema.empty()) {
    Value obj = Value::EmptyObject();
    for (const auto& f : o.schema) obj.Set(f.name, "<" + o.name + "." + f.name + ">");
    return obj;
  }
  return Value("<" + o.name + ">");
}

bool IsPaid(const config::Processor& p) {
  return p.type == "batch_api" || (p.type == "llm" && (p.llm.backend == "openai" || p.llm.backend == "anthropic"));
}

// Upper bound of one output's generated tokens per request; nullopt when the config sets none.
std::optional<int64_t> MaxTokens(const config::Processor& p) {
  if (p.type == "llm") {
    auto sm = process::llm::MapSamplingParams(p);
    if (sm.ok()) return sm->params.max_new_tokens;
    return std::nullopt;
  }
  if (p.type == "batch_api" && p.batch_api.provider == "anthropic") return p.batch_api.max_tokens;
  return std::nullopt;
}

Interval Scale(const Interval& i, double f) { return Interval{i.estimate * f, i.low * f, i.high * f}; }

Value IntervalValue(const std::optional<Interval>& i, int digits) {
  if (!i) return Value();
  Value v = Value::EmptyObject();
  auto num = [&](double x) {
    return digits == 0 ? Value(static_cast<int64_t>(std::llround(x))) : Value(RoundTo(x, digits));
  };
  v.Set("estimate", num(i->estimate));
  v.Set("low", num(i->low));
  v.Set("high", num(i->high));
  return v;
}

Value OptNum(const std::optional<double>& d, int digits) { return d ? Value(RoundTo(*d, digits)) : Value(); }

// Deletes the sample's temporary directory on every path out.
struct TempDirGuard {
  Env* env;
  std::string path;
  ~TempDirGuard() {
    if (!path.empty()) (void)env->RemoveAll(path);
  }
};

// Prompt token counters per processor: the model's tokenizer for GGUF-backed processors, else nullptr.
class Tokenizers {
 public:
  Tokenizers(const config::Config& c, std::vector<std::string>* assumptions) : config_(c), assumptions_(assumptions) {}
  Result<const engine::PromptTokenizer*> For(const config::Processor& p) {
    if (auto it = cache_.find(&p); it != cache_.end()) return it->second.get();
    std::unique_ptr<engine::PromptTokenizer> tok;
    bool gguf = p.type == "llm" &&
                (p.llm.backend == "llama" || (p.llm.backend == "llama-server" && p.llm.server_command.empty()));
    if (gguf) {
      MMIRAGE_ASSIGN_OR_RETURN(process::llm::EngineOptionsMapping m, process::llm::MapEngineOptions(p));
      auto local = process::llm::ResolveModelPath(Env::Default(), m.options.model_path, config::ProcessVarLookup());
      if (!local.ok()) return local.status().WithContext(p.loc.ToString() + ": processor 'llm'");
      auto t = engine::CreateLlamaTokenizer(*local, m.options.chat_template_file);
      if (!t.ok()) return t.status().WithContext(p.loc.ToString() + ": processor 'llm'");
      tok = std::move(*t);
      assumptions_->push_back("Prompt tokens are counted with the model's own tokenizer and chat template (" + *local +
                              ", vocabulary only).");
    } else {
      assumptions_->push_back("Processor '" + p.type + "'" +
                              (p.type == "llm" ? " (backend " + p.llm.backend + ")" : "") +
                              " has no local tokenizer: its prompt tokens are approximated as characters / 4.");
    }
    return (cache_[&p] = std::move(tok)).get();
  }

 private:
  const config::Config& config_;
  std::vector<std::string>* assumptions_;
  std::map<const config::Processor*, std::unique_ptr<engine::PromptTokenizer>> cache_;
};

// Renders every prompt of a row (earlier outputs as placeholders) and counts its tokens.
Status CountRowTokens(const config::Config& c, const pipeline::RowTransform& t, Tokenizers* toks, SampleRow* s) {
  auto row = ParseJson(s->text);
  if (!row.ok() || !row->is_object()) {
    s->render_failed = true;
    return Status::OK();
  }
  auto ex = t.Extract(*row);
  if (!ex.ok) {
    s->render_failed = true;
    return Status::OK();
  }
  Value vars = ex.value;
  for (size_t i = 0; i < c.processing.outputs.size(); ++i) {
    const config::OutputVar& o = c.processing.outputs[i];
    const config::Processor* p = c.FindProcessor(o.type);
    if (o.prompt_tmpl && p != nullptr) {
      auto prompt = t.RenderPrompt(i, vars);
      if (!prompt.ok) {
        s->render_failed = true;
        return Status::OK();
      }
      MMIRAGE_ASSIGN_OR_RETURN(const engine::PromptTokenizer* tok, toks->For(*p));
      if (tok != nullptr) {
        engine::Request req;
        req.prompt = prompt.value;
        auto sm = process::llm::MapSamplingParams(*p);
        if (sm.ok()) req.chat_template_kwargs = sm->chat_template_kwargs;
        auto n = tok->CountPromptTokens(req);
        if (!n.ok()) {
          s->render_failed = true;
          return Status::OK();
        }
        s->tokenizer_input += *n;
      } else {
        s->tokenizer_input += static_cast<int64_t>((prompt.value.size() + 3) / 4);
      }
    }
    vars.Set(o.name, Placeholder(o));
  }
  return Status::OK();
}

// The config of the sample run: the sample files as datasets, everything written under `tmp`, one shard, cache
// off (a measurement of generation, not of the cache), no row failure fatal. `generate_via` redirects paid
// processors to a synchronous OpenAI-compatible endpoint.
Result<config::Config> SampleConfig(const config::Config& c, const std::string& tmp, const std::string& generate_via) {
  config::Config s = c;
  for (size_t d = 0; d < s.loading.datasets.size(); ++d) {
    auto& ds = s.loading.datasets[d];
    ds.path = tmp + "/sample_" + std::to_string(d) + ".jsonl";
    ds.splits.clear();
    ds.output_dir = tmp + "/out_" + std::to_string(d);
  }
  s.loading.state_dir = tmp + "/state";
  s.loading.num_shards = 1;
  s.loading.shard_id = 0;
  s.execution.cache = "off";
  s.execution.max_failed_rows = std::numeric_limits<int32_t>::max();
  s.execution.retry = false;
  s.execution.merge = false;
  s.execution.mode = "local";
  if (generate_via.empty()) return s;
  bool has_llm = false, has_batch = false;
  for (const auto& o : s.processing.outputs) {
    has_llm = has_llm || o.type == "llm";
    has_batch = has_batch || o.type == "batch_api";
  }
  if (has_batch && has_llm) {
    return Status::InvalidArgument(
        "--generate-via: the config has both llm and batch_api outputs; only one kind "
        "can be redirected to one endpoint");
  }
  for (auto& p : s.processors) {
    if (p.type != "llm" || (p.llm.backend != "openai" && p.llm.backend != "anthropic")) continue;
    if (auto price = process::llm::PricingFor(p)) {  // kept for the cost, whatever serves the sample
      p.price_per_million_input_tokens = price->input_per_million;
      p.price_per_million_output_tokens = price->output_per_million;
    }
    p.llm.backend = "openai";  // the endpoint given speaks OpenAI's API
    p.llm.endpoint->base_url = generate_via;
    p.llm.endpoint->base_urls.clear();  // one endpoint, not the fleet
  }
  if (has_batch) {
    const config::Processor* b = c.FindProcessor("batch_api");
    config::Processor llm;
    llm.type = "llm";
    llm.loc = b ? b->loc : config::Loc{};
    llm.llm.backend = "openai";
    config::EndpointConfig ep;
    ep.base_url = generate_via;
    ep.model = b ? b->batch_api.model : "";
    llm.llm.endpoint = ep;
    Value sp = Value::EmptyObject();
    if (b && b->batch_api.provider == "anthropic") sp.Set("max_new_tokens", b->batch_api.max_tokens);
    if (b && b->batch_api.temperature) sp.Set("temperature", *b->batch_api.temperature);
    llm.llm.default_sampling_params = sp;
    llm.price_per_million_input_tokens = b ? b->price_per_million_input_tokens : std::nullopt;
    llm.price_per_million_output_tokens = b ? b->price_per_million_output_tokens : std::nullopt;
    s.processors.push_back(llm);
    for (auto& o : s.processing.outputs)
      if (o.type == "batch_api") o.type = "llm";
  }
  return s;
}

struct SampleRun {
  ShardStats stats;
  std::vector<std::map<int64_t, std::pair<int64_t, int64_t>>> usage;  // per dataset: row → (prompt, completion)
  int64_t failed_rows = 0;
};

Result<SampleRun> RunSample(Env* env, const config::Config& sc, const process::EngineFactory& factory,
                            const std::string& tmp) {
  pipeline::ShardRunOptions ro;
  ro.env = env;
  ro.config = &sc;
  ro.shard_id = 0;
  ro.quiet = true;
  ro.engine_factory = factory;
  auto report = pipeline::RunShard(ro);
  if (!report.ok()) return report.status().WithContext("estimate: the sample run failed");
  SampleRun run;
  run.failed_rows = report->rows_failed;
  MMIRAGE_ASSIGN_OR_RETURN(std::string status, env->ReadFileToString(tmp + "/state/shard_0/status.json"));
  MMIRAGE_ASSIGN_OR_RETURN(Value st, ParseJson(status));
  if (const Value* s = st.Find("stats")) run.stats = ShardStats::FromValue(*s);
  for (size_t d = 0; d < sc.loading.datasets.size(); ++d) {
    run.usage.emplace_back();
    std::string path = sc.loading.datasets[d].output_dir + "/shard_0/usage.jsonl";
    if (!env->FileExists(path)) continue;
    MMIRAGE_ASSIGN_OR_RETURN(std::string text, env->ReadFileToString(path));
    size_t start = 0;
    while (start < text.size()) {
      size_t nl = text.find('\n', start);
      std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
      start = nl == std::string::npos ? text.size() : nl + 1;
      auto u = ParseJson(line);
      if (!u.ok() || !u->is_object()) continue;
      const Value* r = u->Find("row_index");
      const Value* p = u->Find("prompt_tokens");
      const Value* c = u->Find("completion_tokens");
      if (r && p && c && r->is_int() && p->is_int() && c->is_int())
        run.usage.back()[r->as_int()] = {p->as_int(), c->as_int()};
    }
  }
  return run;
}

// The rows of every dataset part and their (dataset, part, shard) cells.
struct Population {
  std::vector<std::vector<DatasetPart>> parts;  // [dataset][part]
  std::vector<Cell> cells;                      // the non-empty ones
  std::map<int64_t, uint64_t> shard_rows;       // rows per shard, over every dataset and part
};

// Step 1: resolves and counts every dataset part, cut into shards. Sets rep->rows_total(_exact).
// Errors: dataset resolution/reading; no rows at all (kInvalidArgument).
Result<Population> CountPopulation(Env* env, const config::Config& c, EstimateReport* rep) {
  Population pop;
  for (size_t d = 0; d < c.loading.datasets.size(); ++d) {
    const config::DatasetConfig& dc = c.loading.datasets[d];
    auto ps = ResolveDatasetParts(env, dc.path, dc.splits);
    if (!ps.ok()) return ps.status().WithContext(dc.loc.ToString() + ": dataset");
    pop.parts.push_back(std::move(*ps));
    for (size_t p = 0; p < pop.parts.back().size(); ++p) {
      std::string note;
      MMIRAGE_ASSIGN_OR_RETURN(uint64_t n, PartRows(env, pop.parts.back()[p], &rep->rows_total_exact, &note));
      if (!note.empty()) rep->assumptions.push_back("Row count estimated: " + note + ".");
      rep->rows_total += static_cast<int64_t>(n);
      for (int64_t s = 0; s < c.loading.num_shards; ++s) {
        RowRange r = ShardRange(n, static_cast<uint64_t>(c.loading.num_shards), static_cast<uint64_t>(s));
        pop.shard_rows[s] += r.size();
        if (r.size() > 0) pop.cells.push_back(Cell{d, p, s, r});
      }
    }
  }
  if (rep->rows_total == 0) return Status::InvalidArgument("estimate: the datasets have no rows");
  return pop;
}

// Step 2: the sample, at least one row per cell and the rest in proportion, evenly spaced inside each cell; the
// same rows every time. Sets rep->sample_rows. Errors: reading; no row sampled (kInvalidArgument).
Result<std::vector<SampleRow>> DrawSample(Env* env, const Population& pop, int64_t sample_rows, EstimateReport* rep) {
  const double total = static_cast<double>(rep->rows_total);
  // [dataset][part] → (row, weight)
  std::vector<std::vector<std::vector<std::pair<uint64_t, double>>>> picks(pop.parts.size());
  for (size_t d = 0; d < pop.parts.size(); ++d) picks[d].resize(pop.parts[d].size());
  for (const Cell& cell : pop.cells) {
    double share = static_cast<double>(sample_rows) * static_cast<double>(cell.range.size()) / total;
    int64_t k = std::clamp<int64_t>(std::llround(share), 1, static_cast<int64_t>(cell.range.size()));
    std::vector<uint64_t> idx = SpreadIndices(cell.range, k);
    double w = static_cast<double>(cell.range.size()) / static_cast<double>(idx.size());
    for (uint64_t i : idx) picks[cell.dataset][cell.part].push_back({i, w});
  }
  if (static_cast<int64_t>(pop.cells.size()) > sample_rows) {
    rep->assumptions.push_back("The sample has " + std::to_string(pop.cells.size()) + " rows instead of " +
                               std::to_string(sample_rows) + ": every dataset, split and shard is represented.");
  }
  std::vector<SampleRow> sample;
  for (size_t d = 0; d < pop.parts.size(); ++d) {
    for (size_t p = 0; p < pop.parts[d].size(); ++p) {
      auto& pk = picks[d][p];
      std::sort(pk.begin(), pk.end());
      std::vector<uint64_t> indices;
      for (const auto& [i, w] : pk) indices.push_back(i);
      RowStream stream(env, pop.parts[d][p], RowRange{0, std::numeric_limits<uint64_t>::max()});
      stream.SetIndexFilter(&indices);
      RawRow raw;
      size_t k = 0;
      while (k < pk.size()) {
        MMIRAGE_ASSIGN_OR_RETURN(bool more, stream.Next(&raw));
        if (!more) break;  // an estimated row count can overshoot
        while (k < pk.size() && pk[k].first < raw.index) ++k;
        if (k < pk.size() && pk[k].first == raw.index) {
          SampleRow s;
          s.dataset = d;
          s.weight = pk[k].second;
          s.text.assign(raw.text);
          sample.push_back(std::move(s));
          ++k;
        }
      }
    }
  }
  rep->sample_rows = static_cast<int64_t>(sample.size());
  if (sample.empty()) return Status::InvalidArgument("estimate: no row could be sampled");
  rep->assumptions.push_back(std::to_string(rep->sample_rows) + " of " + std::to_string(rep->rows_total) +
                             " rows sampled, evenly spaced inside each of the " + std::to_string(pop.cells.size()) +
                             " dataset/split/shard blocks (the same rows every time).");
  return sample;
}

// True when some output's prompt reads an earlier output.
bool HasChainedPrompts(const config::Config& c) {
  bool chained = false;
  for (size_t i = 0; i < c.processing.outputs.size(); ++i) {
    if (!c.processing.outputs[i].prompt_tmpl) continue;
    for (const auto& v : c.processing.outputs[i].prompt_tmpl->UndeclaredVariables())
      for (size_t j = 0; j < i; ++j) chained = chained || c.processing.outputs[j].name == v;
  }
  return chained;
}

// Step 3: every sampled row's prompt tokens, with the model's tokenizer where there is one. Errors: a tokenizer
// that cannot be loaded.
Status CountSampleTokens(Env* env, const config::Config& c, std::vector<SampleRow>* sample,
                         std::vector<std::string>* notes) {
  Tokenizers toks(c, notes);
  int64_t render_failed = 0;
  for (auto& s : *sample) {
    const config::DatasetConfig& dc = c.loading.datasets[s.dataset];
    pipeline::RowTransform t(&c, env, dc.image_base_path.value_or(""));
    MMIRAGE_TRY(CountRowTokens(c, t, &toks, &s));
    if (s.render_failed) ++render_failed;
  }
  if (render_failed > 0) {
    notes->push_back(std::to_string(render_failed) +
                     " sampled row(s) fail before generation (extraction or "
                     "template errors; see `mmirage preview`); they count as 0 tokens.");
  }
  return Status::OK();
}

// What the config's outputs call: which processors, whether any is paid, the bound of their tokens.
struct OutputPlan {
  std::set<const config::Processor*> procs;
  bool paid = false;
  bool has_model_outputs = false;
  std::optional<int64_t> bound_per_row;  // max tokens over all outputs; nullopt when some has none
};

// Step 4: which outputs are paid, cached, bounded. Fills rep->outputs.
OutputPlan PlanOutputs(const config::Config& c, EstimateReport* rep) {
  OutputPlan plan;
  int64_t bound_sum = 0;
  bool bound_known = true;
  for (const auto& o : c.processing.outputs) {
    const config::Processor* p = c.FindProcessor(o.type);
    process::OutputCachePlan cache = process::PlanOutputCache(c, o);
    rep->outputs.push_back({o.name, cache.cached, cache.reason});
    if (p == nullptr) continue;
    plan.has_model_outputs = true;
    plan.procs.insert(p);
    plan.paid = plan.paid || IsPaid(*p);
    auto mt = MaxTokens(*p);
    if (mt) bound_sum += *mt;
    else bound_known = false;
  }
  if (bound_known) plan.bound_per_row = bound_sum;
  int cached_outputs = 0;
  std::string cached_names;
  for (const auto& o : rep->outputs) {
    if (!o.cached) continue;
    ++cached_outputs;
    cached_names += (cached_names.empty() ? "" : ", ") + o.name;
  }
  if (plan.has_model_outputs) {
    rep->assumptions.push_back(
        cached_outputs == 0 ? std::string("No output uses the generation cache (") +
                                  (c.execution.cache == "off" ? "cache: off" : "none is greedy or seeded") + ")."
                            : "Outputs cached for later runs: " + cached_names +
                                  "; a re-run after an edit regenerates only what changed. Estimated as a first run.");
  }
  return plan;
}

// Step 5: runs the sample for real in a temporary directory (removed on every way out), unless there is nothing
// to generate, generation is off, the outputs are paid without --generate-via, or the build cannot run it
// (each said in rep's notes); nullopt then. Errors: writing the sample, an engine that cannot load.
Result<std::optional<SampleRun>> MeasureSample(Env* env, const EstimateOptions& opt, const OutputPlan& plan,
                                               const std::vector<SampleRow>& sample, EstimateReport* rep) {
  const config::Config& c = *opt.config;
  std::vector<std::string>& notes = rep->assumptions;
  if (!plan.has_model_outputs) {
    notes.push_back("The config has no model outputs: no tokens, no inference time.");
    return std::optional<SampleRun>();
  }
  if (!opt.generate) {
    notes.push_back("--no-generate: nothing was generated; output tokens and time are not measured.");
    return std::optional<SampleRun>();
  }
  if (plan.paid && opt.generate_via.empty()) {
    notes.push_back(
        "Paid endpoints (batch_api, backend openai) are not called by estimate: output tokens are "
        "bounded by max tokens. Pass --generate-via URL to measure them on a synchronous endpoint.");
    return std::optional<SampleRun>();
  }
  std::string tmp = config::ProcessVarLookup()("TMPDIR").value_or("/tmp");
  if (tmp.empty()) tmp = "/tmp";
  TempDirGuard guard{env,
                     tmp + "/mmirage-estimate-" + std::to_string(env->Pid()) + "-" + std::to_string(env->NowMicros())};
  MMIRAGE_TRY(env->CreateDirs(guard.path));
  std::vector<std::string> files(c.loading.datasets.size());
  for (const auto& s : sample) files[s.dataset] += s.text + "\n";
  for (size_t d = 0; d < files.size(); ++d) {
    auto f = env->NewWritableFile(guard.path + "/sample_" + std::to_string(d) + ".jsonl");
    if (!f.ok()) return f.status();
    MMIRAGE_TRY((*f)->Append(files[d]));
    MMIRAGE_TRY((*f)->Close());
  }
  MMIRAGE_ASSIGN_OR_RETURN(config::Config sc, SampleConfig(c, guard.path, opt.generate_via));
  Status runnable = pipeline::CheckRunnable(sc);
  if (!runnable.ok()) {
    notes.push_back("The sample cannot run in this build (" + runnable.message() +
                    "): output tokens and time are not measured.");
    return std::optional<SampleRun>();
  }
  LOG_INFO("estimate: running the " << rep->sample_rows << "-row sample"
                                    << (plan.paid ? " on " + opt.generate_via : " on the configured engine"));
  process::EngineFactory factory =
      opt.engine_factory ? opt.engine_factory : process::llm::DefaultEngineFactory({sc.loading.state_dir, 0, nullptr});
  MMIRAGE_ASSIGN_OR_RETURN(SampleRun r, RunSample(env, sc, factory, guard.path));
  return std::optional<SampleRun>(std::move(r));
}

// Step 6: input and output token totals extrapolated from the sample (measured when `run`, else prompt tokens
// counted and output tokens bounded). Returns the output tokens the sample run generated.
int64_t ExtrapolateTokens(const config::Config& c, const std::vector<SampleRow>& sample,
                          const std::optional<SampleRun>& run, const OutputPlan& plan, EstimateReport* rep) {
  std::vector<std::string>& notes = rep->assumptions;
  const double total = static_cast<double>(rep->rows_total);
  const bool chained = HasChainedPrompts(c);
  std::vector<double> in, out, w;
  std::vector<size_t> next_row(c.loading.datasets.size(), 0);
  int64_t sample_out = 0;
  for (const auto& s : sample) {
    int64_t row = static_cast<int64_t>(next_row[s.dataset]++);
    double vin = static_cast<double>(s.tokenizer_input), vout = 0;
    if (run) {
      auto it = run->usage[s.dataset].find(row);
      if (it != run->usage[s.dataset].end()) {
        vin = static_cast<double>(it->second.first);
        vout = static_cast<double>(it->second.second);
      }
    }
    sample_out += static_cast<int64_t>(vout);
    in.push_back(vin);
    out.push_back(vout);
    w.push_back(s.weight);
  }
  rep->input_tokens = ExtrapolateTotal(in, w, total);
  if (run) {
    notes.push_back("Input tokens as the engine counted them on the sample run (retries included).");
    if (chained)
      notes.push_back("Prompts that include earlier outputs were measured with the real outputs of the sample run.");
    rep->output_tokens = ExtrapolateTotal(out, w, total);
    rep->sample_failed_rows = run->failed_rows;
    return sample_out;
  }
  if (chained) {
    notes.push_back(
        "Prompts that include earlier outputs were counted with short placeholders instead of "
        "those outputs: input tokens lean low.");
  }
  if (plan.bound_per_row && plan.has_model_outputs) {
    double b = static_cast<double>(*plan.bound_per_row) * total;
    rep->output_tokens = Interval{b, 0, b};
    rep->output_tokens_bound = true;
    notes.push_back("Output tokens are an upper bound: max tokens (" + std::to_string(*plan.bound_per_row) +
                    " per row over all outputs, first attempts) × rows.");
  } else if (!plan.has_model_outputs) {
    rep->output_tokens = Interval{0, 0, 0};
  }
  return sample_out;
}

// Step 7a: how many shards run at once in the configured mode (rep->concurrency), said in the notes.
void SetConcurrency(const config::ExecutionParams& ex, EstimateReport* rep) {
  std::vector<std::string>& notes = rep->assumptions;
  if (ex.mode == "slurm") {
    rep->concurrency = std::min<int64_t>(ex.array_parallelism.value_or(rep->num_shards), rep->num_shards);
    notes.push_back("Wall time for a SLURM array of " + std::to_string(rep->num_shards) + " tasks, " +
                    std::to_string(rep->concurrency) + " at a time, queueing not included.");
  } else if (ex.retry) {
    rep->concurrency = std::min<int64_t>(ex.local_workers, rep->num_shards);
    notes.push_back("Wall time for `mmirage run` with " + std::to_string(rep->concurrency) +
                    " shard worker(s) at a time (local_workers) sharing this machine's speed as measured alone.");
  } else {
    rep->concurrency = 1;
    if (rep->num_shards > 1)
      notes.push_back("Wall time for the " + std::to_string(rep->num_shards) +
                      " shards run one after another "
                      "(local mode without retry runs one shard per `mmirage run`).");
  }
}

// Step 7b: speed, wall time and GPU figures from the sample run's timing (`remote`: generated on --generate-via,
// no GPU figures). REQUIRES: run.stats.runtime_seconds; rep->output_tokens and rep->concurrency set.
void EstimateTime(const config::Config& c, const EstimateOptions& opt, const Population& pop, const SampleRun& run,
                  int64_t sample_out, bool remote, EstimateReport* rep) {
  std::vector<std::string>& notes = rep->assumptions;
  const double total = static_cast<double>(rep->rows_total);
  uint64_t max_shard_rows = 0;
  for (const auto& [s, n] : pop.shard_rows) max_shard_rows = std::max(max_shard_rows, n);
  const ShardStats& st = run.stats;
  double load = st.model_load_seconds.value_or(0);
  double inf = std::max(1e-6, *st.runtime_seconds - load);
  rep->model_load_seconds = load;
  rep->rows_per_sec = static_cast<double>(st.rows_processed + run.failed_rows) / inf;
  if (sample_out > 0) rep->output_tokens_per_sec = static_cast<double>(sample_out) / inf;
  Interval per_shard;
  if (sample_out > 0 && rep->output_tokens) {
    double sec_per_tok = inf / static_cast<double>(sample_out);
    Interval tok_per_row = Scale(*rep->output_tokens, 1.0 / total);
    per_shard = Scale(tok_per_row, static_cast<double>(max_shard_rows) * sec_per_tok);
    int64_t gpus = st.num_gpus.value_or(0);
    if (!remote) {
      if (gpus <= 0) {
        const config::Processor* p = c.FindProcessor("llm");
        gpus = std::max(1, p ? p->llm.tp_size : 1);
        notes.push_back(
            "Timed on this machine's CPU; a GPU run will differ. GPU figures treat the CPU timing as "
            "if it ran on " +
            std::to_string(gpus) + " GPU(s) (tp_size).");
      }
      rep->gpu_days_per_billion_tokens = static_cast<double>(gpus) * sec_per_tok * 1e9 / 86400.0;
      rep->gpu_hours = static_cast<double>(gpus) * rep->output_tokens->estimate * sec_per_tok / 3600.0;
    } else {
      notes.push_back("Generated on " + opt.generate_via +
                      ": its speed stands for the provider's (batch APIs "
                      "have their own completion window); no GPU figures.");
    }
  } else {
    double t = static_cast<double>(max_shard_rows) / std::max(1e-9, *rep->rows_per_sec);
    per_shard = Interval{t, t, t};
  }
  per_shard.estimate += load;
  per_shard.low += load;
  per_shard.high += load;
  rep->wall_seconds_per_shard = per_shard;
  double waves = std::ceil(static_cast<double>(rep->num_shards) / static_cast<double>(rep->concurrency));
  rep->wall_seconds = Scale(per_shard, waves);
  notes.push_back("Speed measured on the sample run: " + FormatDouble(RoundTo(*rep->rows_per_sec, 2)) +
                  " rows/s after a model load of " + FormatDouble(RoundTo(load, 2)) +
                  " s; a small sample leaves the batch part-empty at its end, so times lean high.");
}

// Step 8: the cost from the processor's prices, when exactly one priced processor is used.
void EstimateCost(const OutputPlan& plan, EstimateReport* rep) {
  bool priced = false;
  for (const auto* p : plan.procs)
    priced = priced || p->price_per_million_input_tokens || p->price_per_million_output_tokens ||
             process::llm::PricingFor(*p).has_value();
  if (priced && plan.procs.size() == 1) {
    const config::Processor* p = *plan.procs.begin();
    auto hosted = process::llm::PricingFor(*p);  // endpoint.pricing or the built-in table (hosted APIs)
    double pin = (hosted ? hosted->input_per_million : p->price_per_million_input_tokens.value_or(0)) / 1e6;
    double pout = (hosted ? hosted->output_per_million : p->price_per_million_output_tokens.value_or(0)) / 1e6;
    Interval o = rep->output_tokens.value_or(Interval{});
    rep->cost_usd = Interval{rep->input_tokens.estimate * pin + o.estimate * pout,
                             rep->input_tokens.low * pin + o.low * pout, rep->input_tokens.high * pin + o.high * pout};
    rep->assumptions.push_back(
        std::string("Cost from price_per_million_input_tokens / price_per_million_output_tokens") +
        (rep->output_tokens_bound ? "; with output tokens at their bound it is an upper bound." : "."));
    if (auto batch = process::llm::BatchApiDiscountFor(*p); batch && p->type == "llm") {
      rep->batch_cost_usd = Scale(*rep->cost_usd, 1 - batch->fraction_off);
      rep->batch_api = batch->name;
      rep->assumptions.push_back("batch_cost_usd: the same rows through the " + batch->name + " (" +
                                 FormatDouble(batch->fraction_off * 100) +
                                 " % off the online price, results within 24 h): a batch_api processor.");
    }
  } else if (priced) {
    rep->assumptions.push_back(
        "Outputs use several priced processors; the cost is not split per processor yet (null).");
  }
}

}  // namespace

Value EstimateReport::ToValue() const {
  Value v = Value::EmptyObject();
  v.Set("rows_total", rows_total);
  v.Set("sample_rows", sample_rows);
  v.Set("input_tokens", IntervalValue(input_tokens, 0));
  v.Set("output_tokens", IntervalValue(output_tokens, 0));
  v.Set("wall_seconds", IntervalValue(wall_seconds, 1));
  v.Set("gpu_days_per_billion_tokens", OptNum(gpu_days_per_billion_tokens, 4));
  v.Set("cost_usd", IntervalValue(cost_usd, 2));
  if (batch_cost_usd) {
    v.Set("batch_cost_usd", IntervalValue(batch_cost_usd, 2));
    v.Set("batch_api", batch_api);
  }
  Value a = Value::EmptyArray();
  for (const auto& s : assumptions) a.Push(Value(s));
  v.Set("assumptions", a);
  v.Set("rows_total_exact", rows_total_exact);
  v.Set("output_tokens_bound", output_tokens_bound);
  v.Set("wall_seconds_per_shard", IntervalValue(wall_seconds_per_shard, 1));
  v.Set("gpu_hours", OptNum(gpu_hours, 4));
  v.Set("num_shards", num_shards);
  v.Set("concurrency", concurrency);
  Value m = Value::EmptyObject();
  m.Set("rows_per_sec", OptNum(rows_per_sec, 3));
  m.Set("output_tokens_per_sec", OptNum(output_tokens_per_sec, 2));
  m.Set("model_load_seconds", OptNum(model_load_seconds, 3));
  m.Set("failed_rows", sample_failed_rows);
  v.Set("measured", m);
  Value outs = Value::EmptyArray();
  for (const auto& o : outputs) {
    Value x = Value::EmptyObject();
    x.Set("name", o.name);
    x.Set("cached", o.cached);
    x.Set("cache_reason", o.reason);
    outs.Push(x);
  }
  v.Set("outputs", outs);
  return v;
}

Result<EstimateReport> RunEstimate(const EstimateOptions& opt) {
  const config::Config& c = *opt.config;
  Env* env = opt.env ? opt.env : Env::Default();
  EstimateReport rep;
  rep.num_shards = c.loading.num_shards;
  MMIRAGE_ASSIGN_OR_RETURN(Population pop, CountPopulation(env, c, &rep));
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<SampleRow> sample, DrawSample(env, pop, opt.sample_rows, &rep));
  MMIRAGE_TRY(CountSampleTokens(env, c, &sample, &rep.assumptions));
  const OutputPlan plan = PlanOutputs(c, &rep);
  MMIRAGE_ASSIGN_OR_RETURN(std::optional<SampleRun> run, MeasureSample(env, opt, plan, sample, &rep));
  const int64_t sample_out = ExtrapolateTokens(c, sample, run, plan, &rep);
  SetConcurrency(c.execution, &rep);
  // A paid processor runs only on --generate-via: its timing is that endpoint's.
  if (run && run->stats.runtime_seconds) EstimateTime(c, opt, pop, *run, sample_out, plan.paid, &rep);
  EstimateCost(plan, &rep);
  if (c.tuned_by)
    rep.assumptions.push_back("The config is a tuned copy (" + *c.tuned_by + "): timings are at the tuned settings.");
  return rep;
}

}  // namespace mmirage::exec
