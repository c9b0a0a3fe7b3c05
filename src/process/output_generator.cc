#include "process/output_generator.h"

#include <algorithm>

#include "cache/generation_cache.h"
#include "data/utf8.h"
#include "process/cache_key.h"
#include "process/llm/engine_choice.h"
#include "process/llm/image_inputs.h"
#include "process/custom/custom_processor.h"
#include "process/image_gen/image_gen_processor.h"
#include "process/llm/json_output.h"
#include "process/llm/llm_options.h"
#include "process/llm/mmproj.h"
#include "process/llm/model_ref.h"
#include "util/log.h"

namespace mmirage::process {

// How one output is generated: its engine, request template and schema.
struct OutputGenerator::Route {
  const config::OutputVar* output = nullptr;
  engine::Engine* engine = nullptr;
  OutputProcessor* processor = nullptr;  // custom / image_gen outputs
  engine::Request base;                  // sampling, kwargs, schema; prompt filled per row
  std::string model_identity;            // non-empty: deterministic requests use the generation cache
  std::vector<std::string> image_names;  // the config's image variables, by name (see image_inputs.h)
};

// One row's generation of one output, across retries.
struct OutputGenerator::Attempt {
  const Route* route = nullptr;
  engine::Request request;
  std::function<void(GenerateResult)> done;
  GenerateResult result;
  std::string cache_key;   // of the request in flight; empty when it bypasses the cache
  bool cacheable = false;  // the first request was deterministic (retries of a sampled one bypass the cache too)
};

namespace {
constexpr double kRetryTemperature = 0.7;  // regenerations of a greedy output sample at this temperature
}  // namespace

EngineFactory LlamaEngineFactory() {
  return [](const config::Processor& p, std::vector<std::string>* warnings) -> Result<std::unique_ptr<engine::Engine>> {
    MMIRAGE_ASSIGN_OR_RETURN(process::llm::EngineOptionsMapping m, process::llm::MapEngineOptions(p));
    warnings->insert(warnings->end(), m.warnings.begin(), m.warnings.end());
    // hf://owner/repo/file.gguf → the cached file, downloaded first when missing.
    auto local = process::llm::ResolveModelPath(Env::Default(), m.options.model_path, config::ProcessVarLookup());
    if (!local.ok()) return local.status().WithContext(p.loc.ToString() + ": processor 'llm'");
    m.options.model_path = *local;
    auto mmproj =
        process::llm::ResolveMmprojPath(Env::Default(), *local, p.llm.mmproj_path, config::ProcessVarLookup());
    if (!mmproj.ok()) return mmproj.status().WithContext(p.loc.ToString() + ": processor 'llm'");
    m.options.mmproj_path = *mmproj;
    auto e = engine::CreateLlamaEngine(m.options);
    if (!e.ok()) return e.status().WithContext(p.loc.ToString() + ": processor 'llm'");
    return e;
  };
}

OutputGenerator::OutputGenerator(const config::Config* config) : config_(config) {}

OutputGenerator::~OutputGenerator() { Shutdown(); }

Result<std::unique_ptr<OutputGenerator>> OutputGenerator::Create(Env* env, const config::Config& config,
                                                                 const EngineFactory& factory,
                                                                 std::vector<std::string>* warnings) {
  std::unique_ptr<OutputGenerator> g(new OutputGenerator(&config));
  for (const auto& o : config.processing.outputs) {
    auto route = std::make_unique<Route>();
    route->output = &o;
    const config::Processor* p = config.FindProcessor(o.type);
    if (p == nullptr) return Status::InvalidArgument(o.loc.ToString() + ": no processor of type '" + o.type + "'");
    if (o.type == "custom" || o.type == "image_gen") {
      if (!g->processors_.count(o.type)) {
        std::unique_ptr<OutputProcessor> proc;
        if (o.type == "custom") {
          MMIRAGE_ASSIGN_OR_RETURN(
              proc, process::custom::StartCustomProcessor(*p, process::custom::CustomStartOptions{}, warnings));
        } else {
          process::image_gen::ImageGenStartOptions io;
          io.env = env;
          io.shard_id = config.loading.shard_id;
          io.log_dir = JoinPath(config.loading.state_dir, "shard_" + std::to_string(config.loading.shard_id));
          MMIRAGE_ASSIGN_OR_RETURN(proc, process::image_gen::StartImageGenProcessor(config, *p, io, warnings));
        }
        g->processors_[o.type] = std::move(proc);
      }
      route->processor = g->processors_[o.type].get();
      g->routes_.push_back(std::move(route));
      continue;
    }
    if (o.type != "llm") {
      return Status::InvalidArgument(o.loc.ToString() + ": output '" + o.name + "' needs the '" + o.type +
                                     "' processor, which this build cannot run yet");
    }
    if (!g->engines_.count(o.type)) {
      config::Processor pc = *p;
      // Image inputs need a projector: without server_args.mmproj_path, look for one next to the model.
      if (pc.llm.mmproj_path.empty() && process::llm::ConfigHasImageInputs(config))
        pc.llm.mmproj_path = process::llm::kMmprojAuto;
      MMIRAGE_ASSIGN_OR_RETURN(auto e, factory(pc, warnings));
      g->engines_[o.type] = std::move(e);
    }
    route->engine = g->engines_[o.type].get();
    MMIRAGE_ASSIGN_OR_RETURN(process::llm::SamplingMapping sm, process::llm::MapSamplingParams(*p));
    warnings->insert(warnings->end(), sm.warnings.begin(), sm.warnings.end());
    route->base.sampling = sm.params;
    route->base.chat_template_kwargs = sm.chat_template_kwargs;
    if (o.json) route->base.json_schema = process::llm::BuildJsonSchema(o.schema);
    route->image_names = process::llm::ImageVariableNames(config);
    g->routes_.push_back(std::move(route));
  }
  return g;
}

void OutputGenerator::Generate(size_t output_index, std::string prompt, const Value& vars, const RowInfo& row,
                               std::function<void(GenerateResult)> done) {
  if (OutputProcessor* proc = routes_[output_index]->processor) {
    proc->Generate(output_index, std::move(prompt), vars, row, std::move(done));
    return;
  }
  auto a = std::make_shared<Attempt>();
  a->route = routes_[output_index].get();
  a->request = a->route->base;
  a->done = std::move(done);
  if (!a->route->image_names.empty()) {
    Result<process::llm::PlacedImages> placed =
        process::llm::PlaceImages(std::move(prompt), vars, a->route->image_names);
    if (!placed.ok()) {
      a->result.status = placed.status().WithContext("output '" + a->route->output->name + "'");
      a->done(std::move(a->result));
      return;
    }
    a->request.prompt = std::move(placed->prompt);
    a->request.images = std::move(placed->images);
  } else {
    a->request.prompt = std::move(prompt);
  }
  a->cacheable = cache_ != nullptr && !a->route->model_identity.empty() && IsDeterministic(a->request.sampling);
  Submit(std::move(a));
}

void OutputGenerator::EnableCache(cache::GenerationCache* cache) {
  cache_ = cache;
  if (cache == nullptr) return;
  const uint64_t start_us = Env::Default()->MonotonicMicros();
  std::map<const config::Processor*, std::string> identities;
  for (auto& r : routes_) {
    const config::Processor* p = config_->FindProcessor(r->output->type);
    if (p == nullptr || p->type != "llm" || r->processor != nullptr) continue;  // custom / image_gen: not cached
    if (!identities.count(p)) {
      std::string model = p->llm.model_path;
      if (process::llm::IsHfModelRef(model)) {  // already downloaded by the engine factory: a local lookup
        auto local = process::llm::ResolveModelPath(Env::Default(), model, config::ProcessVarLookup());
        model = local.ok() ? *local : "";
      }
      // The engine that really runs: a Hub model id without `backend:` runs on SGLang or vLLM, not the embedded one.
      auto chosen =
          process::llm::WithChosenEngine(Env::Default(), *p, process::llm::SystemEngineProbes(), nullptr, nullptr);
      auto id = ModelIdentity(Env::Default(), chosen.ok() ? *chosen : *p, model);
      if (!id.ok())
        LOG_WARN(p->loc.ToString() << ": generation cache off for this processor: " << id.status().message());
      identities[p] = id.ok() ? *id : "";
    }
    r->model_identity = identities[p];
  }
  cache_key_us_ += static_cast<int64_t>(Env::Default()->MonotonicMicros() - start_us);
}

double OutputGenerator::CacheKeySeconds() const { return static_cast<double>(cache_key_us_.load()) / 1e6; }

void OutputGenerator::Submit(std::shared_ptr<Attempt> a) {
  ++a->result.attempts;
  a->cache_key.clear();
  if (a->cacheable) {
    const uint64_t start_us = Env::Default()->MonotonicMicros();
    a->cache_key = RequestKey(a->route->model_identity, a->request);
    cache_key_us_ += static_cast<int64_t>(Env::Default()->MonotonicMicros() - start_us);
    std::optional<cache::CacheEntry> hit;
    if (!a->cache_key.empty()) hit = cache_->Lookup(a->cache_key);
    if (hit) {
      engine::Completion c;
      c.text = std::move(hit->text);
      c.prompt_tokens = hit->prompt_tokens;
      c.completion_tokens = hit->completion_tokens;
      c.finish = hit->finish == 1 ? engine::FinishReason::kLength : engine::FinishReason::kStop;
      OnCompletion(a, std::move(c), /*cached=*/true);
      return;
    }
  }
  engine::Engine* e = a->route->engine;
  e->Submit(a->request, [this, a](engine::Completion c) {
    if (!a->cache_key.empty() && c.finish != engine::FinishReason::kError) {
      cache::CacheEntry entry;
      entry.text = c.text;
      entry.prompt_tokens = c.prompt_tokens;
      entry.completion_tokens = c.completion_tokens;
      entry.finish = c.finish == engine::FinishReason::kLength ? 1 : 0;
      cache_->Insert(a->cache_key, entry);
    }
    OnCompletion(a, std::move(c), /*cached=*/false);
  });
}

void OutputGenerator::OnCompletion(const std::shared_ptr<Attempt>& a, engine::Completion c, bool cached) {
  GenerateResult& r = a->result;
  r.prompt_tokens += c.prompt_tokens;
  r.completion_tokens += c.completion_tokens;
  if (!cached) r.engine_cached_prompt_tokens += c.cached_prompt_tokens;
  if (cached) {
    ++r.cached_generations;
    r.cached_prompt_tokens += c.prompt_tokens;
    r.cached_completion_tokens += c.completion_tokens;
  }
  const config::OutputVar& o = *a->route->output;
  Status st;
  Value value;
  if (c.finish == engine::FinishReason::kError) {
    st = c.error.ok() ? Status::Internal("generation failed") : c.error;
  } else {
    // A generation cut at a token boundary can end inside a character: keep the output valid UTF-8.
    std::string text = ToValidUtf8(c.text);
    size_t b = text.find_first_not_of(" \t\r\n"), en = text.find_last_not_of(" \t\r\n");
    text = b == std::string::npos ? "" : text.substr(b, en - b + 1);
    if (o.json) {
      auto checked = process::llm::CheckJsonOutput(text, o.schema);
      if (checked.ok()) {
        value = std::move(*checked);
      } else {
        st = checked.status();
        if (c.finish == engine::FinishReason::kLength)
          st = st.WithContext("cut at max_new_tokens=" + std::to_string(a->request.sampling.max_new_tokens));
      }
    } else {
      value = Value(std::move(text));
    }
  }
  bool retryable = !st.ok() && !c.error.IsInvalidArgument();  // a prompt too long for the context stays so
  if (!st.ok() && retryable && r.attempts <= o.generation_retries) {
    // Regenerate: another seed, more room when the output was cut, and sampling instead of greedy decoding
    // (a greedy retry would repeat the same output token for token).
    engine::SamplingParams& sp = a->request.sampling;
    sp.seed = sp.seed.value_or(0) + 7919u * static_cast<uint64_t>(r.attempts);
    if (c.finish == engine::FinishReason::kLength) sp.max_new_tokens *= 2;
    if (sp.temperature <= 0) sp.temperature = kRetryTemperature;
    Submit(a);
    return;
  }
  r.status = st.ok() ? Status::OK()
                     : st.WithContext("output '" + o.name + "' (" + std::to_string(r.attempts) + " attempt" +
                                      (r.attempts > 1 ? "s" : "") + ")");
  r.value = std::move(value);
  a->done(std::move(r));
}

int OutputGenerator::Capacity() const {
  int n = 0;
  for (const auto& [_, e] : engines_) n += e->Capacity();
  for (const auto& [_, p] : processors_) n += p->Capacity();
  return std::max(1, n);
}

double OutputGenerator::LoadSeconds() const {
  double s = 0;
  for (const auto& [_, e] : engines_) s += e->LoadSeconds();
  for (const auto& [_, p] : processors_) s += p->LoadSeconds();
  return s;
}

int OutputGenerator::NumGpus() const {
  int n = 0;
  for (const auto& [_, e] : engines_) n = std::max(n, e->NumGpus());
  return n;
}

std::vector<engine::ReplicaStats> OutputGenerator::ReplicaStats() const {
  std::vector<engine::ReplicaStats> out;
  for (const auto& [_, e] : engines_) {
    if (const auto* fleet = dynamic_cast<const engine::FleetEngine*>(e.get())) {
      for (auto& r : fleet->Stats()) out.push_back(std::move(r));
    }
  }
  return out;
}

std::vector<engine::FleetEvent> OutputGenerator::TakeReplicaEvents() {
  std::vector<engine::FleetEvent> out;
  for (const auto& [_, e] : engines_) {
    if (auto* fleet = dynamic_cast<engine::FleetEngine*>(e.get())) {
      for (auto& ev : fleet->TakeEvents()) out.push_back(std::move(ev));
    }
  }
  return out;
}

std::shared_ptr<const engine::AdmissionController> OutputGenerator::Admission() const {
  for (const auto& [_, e] : engines_)
    if (const auto* source = dynamic_cast<const engine::AdmissionSource*>(e.get())) return source->Admission();
  return nullptr;
}

engine::EngineCounters OutputGenerator::Counters() const {
  engine::EngineCounters sum;
  for (const auto& [_, e] : engines_) {
    engine::EngineCounters c = engine::GetEngineCounters(*e);
    sum.prompt_tokens_evaluated += c.prompt_tokens_evaluated;
    sum.prompt_tokens_reused += c.prompt_tokens_reused;
    sum.tokens_generated += c.tokens_generated;
    sum.decode_calls += c.decode_calls;
    sum.images_encoded += c.images_encoded;
    sum.images_reused += c.images_reused;
    sum.image_tokens += c.image_tokens;
  }
  return sum;
}

void OutputGenerator::Shutdown() {
  for (auto& [_, e] : engines_) e->Shutdown();
  for (auto& [_, p] : processors_) p->Shutdown();
}

}  // namespace mmirage::process
