#include "process/output_generator.h"

#include <algorithm>

#include "data/utf8.h"
#include "process/custom_processor.h"
#include "process/image_gen_processor.h"
#include "process/json_output.h"
#include "process/llm_options.h"
#include "process/model_ref.h"

namespace mmirage::process {

// How one output is generated: its engine, request template and schema.
struct OutputGenerator::Route {
  const config::OutputVar* output = nullptr;
  engine::Engine* engine = nullptr;
  OutputProcessor* processor = nullptr;  // custom / image_gen outputs
  engine::Request base;  // sampling, kwargs, schema; prompt filled per row
};

// One row's generation of one output, across retries.
struct OutputGenerator::Attempt {
  const Route* route = nullptr;
  engine::Request request;
  std::function<void(GenerateResult)> done;
  GenerateResult result;
};

namespace {
constexpr double kRetryTemperature = 0.7;  // regenerations of a greedy output sample at this temperature
}  // namespace

EngineFactory LlamaEngineFactory() {
  return [](const config::Processor& p, std::vector<std::string>* warnings) -> Result<std::unique_ptr<engine::Engine>> {
    MMIRAGE_ASSIGN_OR_RETURN(EngineOptionsMapping m, MapEngineOptions(p));
    warnings->insert(warnings->end(), m.warnings.begin(), m.warnings.end());
    // hf://owner/repo/file.gguf → the cached file, downloaded first when missing.
    auto local = ResolveModelPath(Env::Default(), m.options.model_path, config::ProcessEnvLookup());
    if (!local.ok()) return local.status().WithContext(p.loc.ToString() + ": processor 'llm'");
    m.options.model_path = *local;
    auto e = engine::CreateLlamaEngine(m.options);
    if (!e.ok()) return e.status().WithContext(p.loc.ToString() + ": processor 'llm'");
    return e;
  };
}

OutputGenerator::OutputGenerator(const config::Config* config) : config_(config) {}

OutputGenerator::~OutputGenerator() { Shutdown(); }

Result<std::unique_ptr<OutputGenerator>> OutputGenerator::Create(const config::Config& config,
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
          MMIRAGE_ASSIGN_OR_RETURN(proc, StartCustomProcessor(*p, CustomStartOptions{}, warnings));
        } else {
          ImageGenStartOptions io;
          io.shard_id = config.loading.shard_id;
          io.log_dir = JoinPath(config.loading.state_dir, "shard_" + std::to_string(config.loading.shard_id));
          MMIRAGE_ASSIGN_OR_RETURN(proc, StartImageGenProcessor(config, *p, io, warnings));
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
      MMIRAGE_ASSIGN_OR_RETURN(auto e, factory(*p, warnings));
      g->engines_[o.type] = std::move(e);
    }
    route->engine = g->engines_[o.type].get();
    MMIRAGE_ASSIGN_OR_RETURN(SamplingMapping sm, MapSamplingParams(*p));
    warnings->insert(warnings->end(), sm.warnings.begin(), sm.warnings.end());
    route->base.sampling = sm.params;
    route->base.chat_template_kwargs = sm.chat_template_kwargs;
    if (o.json) route->base.json_schema = BuildJsonSchema(o.schema);
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
  a->request.prompt = std::move(prompt);
  a->done = std::move(done);
  Submit(std::move(a));
}

void OutputGenerator::Submit(std::shared_ptr<Attempt> a) {
  ++a->result.attempts;
  engine::Engine* e = a->route->engine;
  e->Submit(a->request, [this, a](engine::Completion c) {
    GenerateResult& r = a->result;
    r.prompt_tokens += c.prompt_tokens;
    r.completion_tokens += c.completion_tokens;
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
        auto checked = CheckJsonOutput(text, o.schema);
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
  });
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

engine::EngineCounters OutputGenerator::Counters() const {
  engine::EngineCounters sum;
  for (const auto& [_, e] : engines_) {
    engine::EngineCounters c = engine::GetEngineCounters(*e);
    sum.prompt_tokens_evaluated += c.prompt_tokens_evaluated;
    sum.prompt_tokens_reused += c.prompt_tokens_reused;
    sum.tokens_generated += c.tokens_generated;
    sum.decode_calls += c.decode_calls;
  }
  return sum;
}

void OutputGenerator::Shutdown() {
  for (auto& [_, e] : engines_) e->Shutdown();
  for (auto& [_, p] : processors_) p->Shutdown();
}

}  // namespace mmirage::process
