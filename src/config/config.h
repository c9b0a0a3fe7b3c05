// The MMIRAGE YAML configuration as typed structs, plus our extensions.
//
// LoadConfig parses, expands ${ENV}, converts, and validates in one pass: every error is reported, each as
// `FILE:LINE:COL: message` on its own line of the returned Status (kInvalidArgument). Unknown keys are
// warnings with their location (Config::warnings), never silently dropped. JMESPath keys and Jinja templates are
// compiled here, once, so a bad expression is a config error before any row is read.
// Plain data: a Config is immutable after loading and may be shared by threads.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/value.h"
#include "query/jmespath.h"
#include "template/template.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::config {

// Where a value was written: "file:line:col" (1-based).
struct Loc {
  std::string file;
  int line = 0;
  int col = 0;
  std::string ToString() const;
};

// ---- processors ------------------------------------------------------------------------------------------------
// Extension: an OpenAI-compatible endpoint (backend: openai, or a managed server's address once started), or
// Anthropic's Messages API (backend: anthropic).
struct EndpointConfig {
  std::string base_url;                    // e.g. http://host:30000/v1
  std::string api_key_env;                 // name of the environment variable holding the key (never the key)
  std::string model;                       // model name sent in requests (empty: the server's default)
  std::string mode = "chat";               // chat | completion (the rendered prompt is sent verbatim)
  std::optional<int64_t> max_concurrency;  // default: extra_engine_args.max_running_requests, else 64
  bool max_concurrency_auto = false;       // `max_concurrency: auto`: adaptive (AIMD), at most max_concurrency
  // rate_limits: absent → learned from the endpoint's x-ratelimit-* headers (none: unlimited).
  std::optional<double> requests_per_minute, tokens_per_minute;
  // pricing: USD per million tokens (absent: the built-in table of well-known models, process/llm/pricing.h).
  struct Pricing {
    double input_per_million = 0, output_per_million = 0;
    std::optional<double> cached_input_per_million;  // absent: input_per_million
  };
  std::optional<Pricing> pricing;
  std::string system_prompt;                     // backend anthropic: the `system` parameter
  std::string anthropic_version = "2023-06-01";  // backend anthropic: the anthropic-version header
  double timeout_seconds = 600;                  // per request
  int64_t max_retries = 5;                       // per request, on 429 / 5xx / connection errors / timeouts
  double down_timeout_seconds = 120;             // endpoint unreachable this long → the shard fails fast
  std::vector<std::string> base_urls;  // several servers of one model: a fleet (engine/fleet.h); base_url = [0]
};

struct LlmProcessor {
  // Extension: which engine runs the model. llama = embedded llama.cpp (default); openai = an existing
  // OpenAI-compatible endpoint; anthropic = Anthropic's Messages API; sglang | vllm | llama-server = a server
  // mmirage starts for the shard.
  std::string backend = "llama";
  bool backend_set =
      false;  // `backend:` written; when not, a Hub model id picks sglang/vllm (process/llm/engine_choice.h)
  std::optional<EndpointConfig> endpoint;
  std::vector<std::string> server_command;  // managed servers: the command, verbatim (else built from server_args)
  double server_startup_timeout_seconds = 900;
  std::string model_path = "none";
  int tp_size = 1;  // default from SLURM_GPUS_ON_NODE when absent (else 1)
  bool trust_remote_code = true;
  bool disable_custom_all_reduce = false;
  Value extra_engine_args = Value::EmptyObject();        // map string → any
  Value default_sampling_params = Value::EmptyObject();  // map string → any, passed to every generation
  std::string chat_template;                             // template name or file
  std::string mmproj_path;  // server_args.mmproj_path: vision projector GGUF, hf:// ref or "auto"
  // server_args.replicas (managed servers): servers per shard, each on its own GPU slice; "auto" (replicas_auto):
  // visible GPUs / tp_size. More than one: a fleet (engine/fleet.h). config/fleet.cc reads them.
  int64_t replicas = 1;
  bool replicas_auto = false;
  int64_t max_restarts = 3;  // server_args.max_restarts: per replica of a fleet
  // prefix_affinity (in endpoint or server_args) of a fleet: prompt characters that key a row's replica (0: off),
  // and how many more outstanding requests than the least loaded replica that replica may have.
  int64_t affinity_prefix_chars = 256;
  int64_t affinity_max_imbalance = 2;
  bool affinity_set = false;  // written in endpoint or server_args (not both)
};

struct BatchApiProcessor {
  std::string provider;  // trimmed, lower-cased: "openai" | "anthropic"
  int64_t max_chunk_bytes = 52428800;
  std::optional<int64_t> max_requests_per_chunk;
  std::string metadata_output_path;
  std::string oversized_request_policy = "isolate";     // isolate | reject
  std::string model;                                    // provider default when absent
  std::string batch_endpoint = "/v1/chat/completions";  // openai
  std::string completion_window = "24h";                // openai
  std::optional<std::string> base_url;
  Value metadata = Value::EmptyObject();  // openai: map string → string
  int64_t max_tokens = 8192;              // anthropic
  std::optional<double> temperature;      // anthropic, [0, 1]; openai (extension), [0, 2]
  std::optional<int64_t> seed;            // openai (extension); with temperature 0 it makes answers cacheable
  std::optional<double> top_p;            // anthropic, (0, 1]
  bool temperature_is_int = false, top_p_is_int = false;  // written as YAML ints: sent as ints
  std::optional<double> timeout_seconds;                  // anthropic, > 0
  // Extensions: `run` polls until every batch is done (instead of leaving the shard submitted), every
  // poll_interval_seconds; prices (per million tokens, any currency) give the shard's cost in its stats.
  bool wait = false;
  int64_t poll_interval_seconds = 60;
  std::optional<double> price_per_million_input_tokens, price_per_million_output_tokens;
};

struct ImageGenEndpoint {
  std::string base_url;
  std::optional<std::string> api_key;
  std::optional<std::string> api_key_env;  // extension: the variable holding the key (preferred over api_key)
  int64_t timeout_seconds = 900;
  std::optional<std::string> request_model;
  int64_t max_concurrent_requests = 1;
};

struct ImageGenSglang {
  std::string model_path;
  std::optional<int64_t> port;
  int64_t num_gpus = 1;
  std::optional<std::string> dtype;
  int64_t startup_timeout_seconds = 900;
  std::vector<std::string> extra_server_args;
  std::optional<std::string> api_key;
  std::optional<std::string> api_key_env;  // extension, as in ImageGenEndpoint
  int64_t timeout_seconds = 900;
  std::optional<std::string> request_model;
  int64_t max_concurrent_requests = 1;
};

struct ImageGenProcessor {
  std::string backend = "external";  // external | sglang
  std::optional<ImageGenEndpoint> external;
  std::optional<ImageGenSglang> sglang;
  Value default_sampling_params = Value::EmptyObject();
  bool parallel_inference = true;
  std::optional<int64_t> parallel_chunk_size = 4;
  std::string output_dir = "~/.cache/MMIRAGE/generated_images";
  std::string file_format = "png";
};

struct CustomProcessor {
  std::string script_path;
  std::string function_name;
  int64_t max_workers = 1;
  std::optional<int64_t> timeout_ms;
  int64_t max_timeouts = 1;
  int64_t max_errors = 1;
  Value fallback_value;
  std::string start_method = "spawn";
  // Extensions: the interpreter for script_path (else $MMIRAGE_PYTHON, else python3 on PATH), or a command that
  // speaks the worker protocol itself (docs/custom_worker_protocol.md) instead of script_path/function_name.
  std::string python_executable;
  std::vector<std::string> command;
};

struct Processor {
  std::string type;  // llm | batch_api | image_gen | custom
  Loc loc;
  LlmProcessor llm;
  BatchApiProcessor batch_api;
  ImageGenProcessor image_gen;
  CustomProcessor custom;
  // Extension (any type): prices for `mmirage estimate`, in the currency of the user's choice (reported as USD).
  std::optional<double> price_per_million_input_tokens, price_per_million_output_tokens;
};

// ---- processing ------------------------------------------------------------------------------------------------
struct InputVar {
  std::string name;
  std::string key;                        // JMESPath source text
  std::optional<query::Expression> expr;  // compiled key (set when valid)
  bool image = false;                     // type: image
  bool optional = false;                  // extension: a null/missing result is allowed (variable = null)
  std::optional<Value> default_value;     // extension: value used when the result is null/missing
  Loc loc;
};

enum class FieldType { kString, kInt, kNumber, kBool };
struct SchemaField {
  std::string name;
  FieldType type = FieldType::kString;
  std::optional<double> min, max;  // inclusive bounds, numeric types only
};

struct OutputVar {
  std::string name;
  std::string type;  // processor type it is routed to
  Loc loc;
  std::string prompt;
  std::optional<tmpl::Template> prompt_tmpl;
  std::string output_type;  // "JSON" (exactly) enables JSON mode
  bool json = false;
  std::vector<SchemaField> schema;  // llm JSON schema; batch_api: names only (all strings)
  int64_t generation_retries = 2;   // extension (llm): regenerations after an invalid JSON output or an error
  // image_gen
  std::string negative_prompt;
  std::optional<tmpl::Template> negative_prompt_tmpl;
  std::string output_mode = "path";  // path | pil
  std::string filename_template = "generated_{{ __shard_id }}_{{ __sample_index }}_{{ __source_hash }}";
  std::optional<tmpl::Template> filename_tmpl;
  std::optional<int64_t> width, height, num_inference_steps, seed;
  std::optional<double> guidance_scale;
};

// A node of processing_params.output_schema: a map, a list, a template string or a constant.
struct OutputMember;  // {first: key, second: node}; a struct, not a std::pair, so that clang accepts the recursion
struct OutputNode {
  enum class Kind { kMap, kList, kTemplate, kConst };
  Kind kind = Kind::kConst;
  std::vector<OutputMember> members;     // kMap, in YAML order
  std::vector<OutputNode> items;         // kList
  std::optional<tmpl::Template> tmpl;    // kTemplate
  std::optional<std::string> plain_var;  // kTemplate that is exactly `{{ var }}`
  Value constant;                        // kConst
  Loc loc;                               // where the node was written
};
struct OutputMember {
  std::string first;
  OutputNode second;
};

struct ProcessingParams {
  std::vector<InputVar> inputs;
  std::vector<OutputVar> outputs;
  OutputNode output_schema;  // kMap
  bool remove_columns = false;
  bool cast_images = true;
  // Extension: the order rows are sent to the engines. input (default) | prefix: within the bounded window of rows
  // in flight, generations are dispatched grouped by their prompt's leading bytes so that engine prefix caches hit;
  // the output keeps input order either way.
  std::string order = "input";
};

// ---- loading ---------------------------------------------------------------------------------------------------
struct DatasetConfig {
  std::string type;  // JSONL | loadable (HF save_to_disk directory) | parquet
  std::string path;  // file or glob (when splits is empty); loadable: the directory
  std::vector<std::pair<std::string, std::string>> splits;  // split name → file/glob, YAML order
  std::string output_dir;
  std::optional<std::string> image_base_path;
  std::string output_format = "hf";  // hf (HF save_to_disk layout) | jsonl | parquet
  Loc loc;
};

struct LoadingParams {
  std::vector<DatasetConfig> datasets;
  std::string state_dir;  // default ~/.cache/MMIRAGE/state_dir, ~ expanded
  int64_t num_shards = 1;
  int64_t shard_id = 0;
  int64_t batch_size = 1;  // clamped to >= 1
  Loc shard_id_loc, num_shards_loc;
};

// ---- execution -------------------------------------------------------------------------------------------------
// execution_params.ray (mode: ray; docs/ray.md): where the Ray Jobs API is and what each shard task asks for.
struct RayParams {
  // The Jobs API URL http(s)://host:port, resolved from `address` (or $RAY_API_SERVER_ADDRESS, $RAY_ADDRESS, then
  // auto): ray://host:port, host:port and auto (127.0.0.1) name the head, whose dashboard is on dashboard_port.
  std::string address;
  std::string given_address;       // the address as written (ray://head:10001, auto, ...), for messages
  int64_t dashboard_port = 8265;   // the head's dashboard port, for the addresses that name the head only
  double num_cpus = 1;             // per shard task, >= 0
  double num_gpus = 0;             // per shard task, >= 0
  int64_t memory_bytes = 0;        // per shard task; 0: no memory request
  std::string runtime_env;         // JSON object text ("" when absent), passed to the job as its runtime_env
  int64_t max_parallel = 0;        // shard tasks at once; 0: as many as the cluster schedules
  std::string python = "python3";  // the cluster's Python that runs the driver program
};

struct ExecutionParams {
  std::string mode = "local";  // local | slurm | ray
  bool retry = false;
  bool merge = false;
  int64_t max_retries = 3;
  int64_t poll_interval_seconds = 30;
  int64_t settle_time_seconds = 60;
  std::optional<std::string> project_root;
  std::string report_dir = "~/reports";
  std::string hf_home = "~/hf";
  std::optional<std::string> edf_env;
  std::optional<std::string> account;
  std::string job_name = "mmirage-sharded";
  std::optional<std::string> reservation;
  int64_t nodes = 1;
  int64_t ntasks_per_node = 1;
  int64_t gpus = 4;
  int64_t cpus_per_task = 288;
  std::string time_limit = "11:59:59";
  int64_t max_failed_rows = 0;  // extension: rows allowed in errors.jsonl before the shard fails
  // Extension: what one run of a shard may spend on a hosted API (USD, its known price): no row is started once the
  // projected cost would pass it; the shard commits and stops, resumable.
  std::optional<double> max_cost_usd;
  // Extensions: local execution and resume.
  int64_t local_workers = 1;    // shard processes run at once by `run` in local mode
  int64_t gpus_per_worker = 0;  // local mode: each worker its own GPUs (CUDA_VISIBLE_DEVICES slice); 0: all visible
  // The writer commits durably every N rows (default: 256 rows with model outputs, 1,000,000 without or with only
  // custom outputs — such rows are cheap to redo and an fsync per 256 of them would dominate) ...
  std::optional<int64_t> commit_every_rows;
  double commit_interval_seconds = 5;      // ... or every T seconds, whichever comes first
  double heartbeat_timeout_seconds = 300;  // a `running` shard silent this long counts as failed
  // Extensions: SLURM.
  std::optional<std::string> partition, qos, mem;
  std::optional<int64_t> array_parallelism;  // the %N throttle of --array
  std::vector<std::string> extra_sbatch_args;
  std::optional<std::string> mmirage_bin;  // binary the array tasks run (default: this binary's absolute path)
  // Extensions: the generation cache (docs/generation_cache.md).
  std::string cache = "readwrite";  // off | read | readwrite (YAML `off`/false is accepted for off)
  std::string cache_dir;            // resolved at load; default <parent of state_dir>/generation_cache
  double cache_max_gb = 10;         // sealed cache files beyond this are evicted (LRU), > 0
  RayParams ray;                    // mode: ray
};

struct Config {
  std::string path;          // absolute path of the YAML file
  uint64_t fingerprint = 0;  // hash of the YAML text: partial outputs of another config are not resumed
  // Every environment variable the loader looked up (${VAR}, $VAR, HOME for ~) and its value then (nullopt:
  // unset): with the YAML text, what the expanded config depends on (part of the resume identity).
  std::map<std::string, std::optional<std::string>> expanded_vars;
  std::vector<Processor> processors;  // YAML order
  LoadingParams loading;
  ProcessingParams processing;
  ExecutionParams execution;
  // Extension, top-level `tuned_by`: written by `mmirage tune --write` (what was tuned, when, the measured gain);
  // stats, the report and estimate say that the run used a tuned config.
  std::optional<std::string> tuned_by;
  std::vector<std::string> warnings;  // "FILE:LINE:COL: message"

  // The processor an output is routed to (the last declared one of that type), or nullptr.
  const Processor* FindProcessor(const std::string& type) const;
};

// Looks an environment variable up; nullopt when unset. Injected for tests.
using VarLookup = std::function<std::optional<std::string>(const std::string&)>;
VarLookup ProcessVarLookup();

struct LoadOptions {
  Env* fs = nullptr;                         // file access; default Env::Default()
  VarLookup vars;                            // default: the process environment
  std::optional<int64_t> shard_id_override;  // --shard-id: replaces loading_params.shard_id
};

// Errors: kNotFound/kIOError for an unreadable file; kInvalidArgument listing every config error, one per line,
// followed by the warnings, each line prefixed with "warning: ".
Result<Config> LoadConfig(const std::string& path, const LoadOptions& options = {});
// Same, from YAML text (`name` is used in locations).
Result<Config> LoadConfigFromString(const std::string& yaml, const std::string& name, const LoadOptions& options = {});

// Python os.path.expandvars semantics: $NAME and ${...}; undefined references stay verbatim.
std::string ExpandEnvVars(const std::string& s, const VarLookup& vars);
// "~" and "~/..." → $HOME/...
std::string ExpandUser(const std::string& s, const VarLookup& vars);

}  // namespace mmirage::config
