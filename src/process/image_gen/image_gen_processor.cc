// Requests and images: each row's sample is one request; at most `max_concurrent_requests` are in flight (1 when
// parallel_inference is false); a 429 / 5xx / connection failure / timeout is retried alone with exponential
// backoff (Retry-After honoured). Seeds are per output: `seed + shard_id * 1e9 + __sample_index`, where
// __sample_index is the row's position in the shard (so a second image_gen output does not shift the first's, and
// a re-run gets the same seeds). Images arrive as b64_json, are checked by decoding them, re-encoded when the
// server's format is not `file_format` (png, jpeg, webp), and either written atomically under `output_dir`
// (`output_mode: path`, the value is the absolute path) or kept as an image value {"bytes": <file bytes>,
// "path": null} (`pil`, HF's form of an image). File names: the rendered `filename_template` sanitised to
// [A-Za-z0-9._-] (so never outside output_dir), a re-run overwriting its own files. `backend: sglang` starts
// `sglang serve` (engine/managed_server.h) and stops it at Shutdown.

#include "process/image_gen/image_gen_processor.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "data/json.h"
#include "engine/managed_server.h"
#include "process/image_gen/image_codec.h"
#include "util/base64.h"
#include "util/env.h"
#include "util/http/event_loop.h"
#include "util/log.h"
#include "util/net.h"
#include "util/sha.h"

namespace mmirage::process::image_gen {
namespace {

std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string_view::npos ? "" : std::string(s.substr(b, e - b + 1));
}

std::string Preview(std::string_view s, size_t n) {
  std::string out(s.substr(0, n));
  if (s.size() > n) out += "...";
  return out;
}

Value Canonical(const Value& v) {
  if (v.is_array()) {
    Value out = Value::EmptyArray();
    for (const auto& x : v.as_array()) out.Push(Canonical(x));
    return out;
  }
  if (!v.is_object()) return v;
  std::vector<std::pair<std::string, const Value*>> members;
  for (const auto& [k, x] : v.as_object()) members.emplace_back(k, &x);
  std::stable_sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Value out = Value::EmptyObject();
  for (const auto& [k, x] : members) out.Set(k, Canonical(*x));
  return out;
}

bool Truthy(const Value& v) {
  if (v.is_null()) return false;
  if (v.is_bool()) return v.as_bool();
  if (v.is_int()) return v.as_int() != 0;
  if (v.is_double()) return v.as_double() != 0;
  if (v.is_string()) return !v.as_string().empty();
  if (v.is_array()) return !v.as_array().empty();
  if (v.is_object()) return !v.as_object().empty();
  return true;
}

std::string ValueText(const Value& v) {
  if (v.is_string()) return v.as_string();
  if (v.is_double() && v.as_double() == static_cast<double>(static_cast<int64_t>(v.as_double())))
    return std::to_string(static_cast<int64_t>(v.as_double()));
  return ToJson(v);
}

// One sample of one output for one row, across attempts.
struct Sample {
  size_t output_index = 0;
  std::string body;
  std::string stem;  // file name without extension (path mode)
  std::string file;  // file name in output_dir (path mode), claimed when the sample is submitted
  int64_t sample_index = 0;
  std::string prompt_preview;  // for error messages
  int attempts = 0;
  std::function<void(GenerateResult)> done;
  std::string b64;  // the image, once received
};

class ImageGenProcessor final : public OutputProcessor {
 public:
  ImageGenProcessor(const config::Config& config, const config::Processor& p, const ImageGenStartOptions& o)
      : config_(config), cfg_(p.image_gen), loc_(p.loc.ToString()), options_(o), env_(o.env ? o.env : Env::Default()) {}
  ~ImageGenProcessor() override { Shutdown(); }

  Status Start(std::vector<std::string>* warnings) {
    uint64_t t0 = env_->MonotonicMicros();
    config::VarLookup vars = options_.vars ? options_.vars : config::ProcessVarLookup();
    std::string where = loc_ + ": processor 'image_gen': ";
    // Endpoint settings of the chosen backend.
    std::optional<std::string> api_key, api_key_env;
    std::string url;
    if (cfg_.backend == "external") {
      const config::ImageGenEndpoint& e = *cfg_.external;
      url = e.base_url;
      api_key = e.api_key;
      api_key_env = e.api_key_env;
      timeout_seconds_ = static_cast<double>(e.timeout_seconds);
      request_model_ = e.request_model.value_or("");
      max_in_flight_ = static_cast<int>(e.max_concurrent_requests);
    } else {
      const config::ImageGenSglang& s = *cfg_.sglang;
      api_key = s.api_key;
      api_key_env = s.api_key_env;
      timeout_seconds_ = static_cast<double>(s.timeout_seconds);
      request_model_ = s.request_model.value_or("");
      max_in_flight_ = static_cast<int>(s.max_concurrent_requests);
      if (auto given = vars("MMIRAGE_SGLANG_BASE_URL"); given && !Trim(*given).empty()) {
        url = *given;
      } else {
        MMIRAGE_TRY(StartServer(s, where));
        url = server_->base_url();
      }
    }
    if (!cfg_.parallel_inference) max_in_flight_ = 1;
    if (api_key_env && !api_key_env->empty()) {
      auto k = vars(*api_key_env);
      if (!k || k->empty())
        return Status::InvalidArgument(where + "api_key_env names '" + *api_key_env + "', which is not set");
      api_key = *k;
    }
    if (api_key && !api_key->empty()) headers_.push_back("Authorization: Bearer " + *api_key);
    headers_.push_back("Accept: application/json");
    headers_.push_back("Content-Type: application/json");
    auto urls = NormalizeImageGenUrl(url);
    if (!urls.ok()) return urls.status().WithContext(where);
    urls_ = *urls;
    // Output directory: ~ expanded, absolute, created.
    output_dir_ = env_->AbsolutePath(config::ExpandUser(cfg_.output_dir, vars));
    while (output_dir_.size() > 1 && output_dir_.back() == '/') output_dir_.pop_back();
    format_ = ImageFormatFromName(cfg_.file_format);
    if (format_ == ImageFormat::kUnknown)
      return Status::InvalidArgument(where + "file_format '" + cfg_.file_format + "' is not png, jpeg, jpg or webp");
    ext_ = cfg_.file_format;
    for (char& c : ext_) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    bool any_path = false;
    for (const auto& o : config_.processing.outputs)
      any_path = any_path || (o.type == "image_gen" && o.output_mode == "path");
    if (any_path) {
      Status s = env_->CreateDirs(output_dir_);
      if (!s.ok()) return s.WithContext(where + "cannot create output_dir");
    }
    MMIRAGE_TRY(Validate(where));
    auto loop = NewCurlHttpLoop(max_in_flight_ + 2);
    if (!loop.ok()) return loop.status();
    loop_ = std::move(*loop);
    saver_ = std::thread([this] { SaverLoop(); });
    load_seconds_ = static_cast<double>(env_->MonotonicMicros() - t0) / 1e6;
    (void)warnings;
    return Status::OK();
  }

  void Generate(size_t output_index, std::string prompt, const Value& vars, const RowInfo& row,
                std::function<void(GenerateResult)> done) override {
    const config::OutputVar& o = config_.processing.outputs[output_index];
    auto fail = [&](Status s) {
      GenerateResult r;
      r.status = std::move(s);
      done(std::move(r));
    };
    std::string negative;
    if (o.negative_prompt_tmpl) {
      auto n = o.negative_prompt_tmpl->Render(vars);
      if (!n.ok()) return fail(n.status().WithContext("negative_prompt"));
      negative = *n;
    }
    std::optional<int64_t> seed;
    if (o.seed) seed = *o.seed + options_.shard_id * 1000000000LL + row.sample_index;
    auto body = BuildImageRequestBody(cfg_, o, request_model_, prompt, negative, seed);
    if (!body.ok()) return fail(body.status());
    auto s = std::make_shared<Sample>();
    s->output_index = output_index;
    s->body = std::move(*body);
    s->sample_index = row.sample_index;
    s->prompt_preview = Preview(Trim(prompt), 80);
    s->done = std::move(done);
    if (o.output_mode == "path") {
      Value ctx = vars.is_object() ? vars : Value::EmptyObject();
      ctx.Set("__sample_index", row.sample_index);
      ctx.Set("__output_name", o.name);
      ctx.Set("__shard_id", options_.shard_id);
      ctx.Set("__source_hash", SourceHash(vars));
      std::string rendered;
      if (o.filename_tmpl) {
        auto f = o.filename_tmpl->Render(ctx);
        if (!f.ok()) return fail(f.status().WithContext("filename_template"));
        rendered = *f;
      }
      s->stem = SanitizeFileStem(rendered);
      s->file = ClaimName(s.get());  // in submission order: rows reach the first output in input order
    }
    if (!loop_->Post([this, s] {
          queue_.push_back(s);
          Pump();
        })) {
      GenerateResult r;
      r.status = Status::Unavailable("the image_gen processor is shut down");
      s->done(std::move(r));
    }
  }

  int Capacity() const override { return max_in_flight_; }
  double LoadSeconds() const override { return load_seconds_; }

  void Shutdown() override {
    if (loop_) {
      loop_stopping_ = true;
      loop_->Stop();  // transfers in flight end with kAborted → their rows fail
      // Samples still queued on the loop (never sent) or waiting for a backoff timer.
      for (auto& s : queue_) Finish(s, Status::Unavailable("the image_gen processor is shut down"));
      queue_.clear();
      for (auto& s : waiting_) Finish(s, Status::Unavailable("the image_gen processor is shut down"));
      waiting_.clear();
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    if (saver_.joinable()) saver_.join();
    if (server_) server_->Stop();
  }

 private:
  Status StartServer(const config::ImageGenSglang& s, const std::string& where) {
    std::string dir = options_.log_dir.empty() ? env_->AbsolutePath(".") : options_.log_dir;
    auto server =
        StartImageServer(s, JoinPath(dir, "sglang_image_server_shard_" + std::to_string(options_.shard_id) + ".log"));
    if (!server.ok()) return server.status().WithContext(where);
    server_ = std::move(*server);
    return Status::OK();
  }

  // GET <root>/models, <api>/models, <root>/health: the first JSON object answers.
  Status Validate(const std::string& where) {
    std::string tried;
    for (const std::string& u : {urls_.root + "/models", urls_.api + "/models", urls_.root + "/health"}) {
      HttpRequest req;
      req.method = "GET";
      req.url = u;
      req.headers = headers_;
      req.timeout_seconds = options_.validate_timeout_seconds;
      HttpResponse r = HttpFetch(req);
      std::string why;
      if (r.transport != HttpTransport::kOk) {
        why = r.error.empty() ? "unreachable" : r.error;
      } else if (r.status_code != 200) {
        why = "HTTP " + std::to_string(r.status_code);
      } else {
        auto v = ParseJson(r.body);
        if (v.ok() && v->is_object()) return Status::OK();
        why = "not a JSON object";
      }
      tried += "\n  " + u + ": " + why;
    }
    return Status::Unavailable(where + "Cannot reach SGLang server. Tried:" + tried);
  }

  // Loop thread: sends queued samples while there is room.
  void Pump() {
    if (loop_stopping_) return;
    while (in_flight_ < max_in_flight_ && !queue_.empty()) {
      std::shared_ptr<Sample> s = queue_.front();
      queue_.pop_front();
      ++in_flight_;
      ++s->attempts;
      HttpRequest req;
      req.method = "POST";
      req.url = urls_.api + "/images/generations";
      req.headers = headers_;
      req.body = s->body;
      req.timeout_seconds = timeout_seconds_;
      loop_->Send(std::move(req), [this, s](HttpResponse r) { OnResponse(s, std::move(r)); });
    }
  }

  void OnResponse(const std::shared_ptr<Sample>& s, HttpResponse r) {
    --in_flight_;
    const std::string url = urls_.api + "/images/generations";
    Status err;
    bool retryable = false;
    if (r.transport == HttpTransport::kAborted) {
      err = Status::Unavailable("the image_gen processor is shut down");
    } else if (r.transport != HttpTransport::kOk) {
      retryable = true;
      err =
          Status::Unavailable("Could not reach SGLang server at " + url + ": " +
                              (r.transport == HttpTransport::kTimeout
                                   ? "timed out after " + std::to_string(static_cast<int64_t>(timeout_seconds_)) + " s"
                                   : r.error));
    } else if (r.status_code != 200) {
      retryable = r.status_code == 429 || r.status_code >= 500;
      err = Status::Unavailable("SGLang server returned HTTP " + std::to_string(r.status_code) + " for " + url + ": " +
                                Preview(r.body, 500));
    } else {
      auto v = ParseJson(r.body);
      if (!v.ok()) {
        err =
            Status::Corruption("SGLang server returned a non-JSON response from " + url + ": " + Preview(r.body, 500));
      } else {
        const Value* data = v->is_object() ? v->Find("data") : nullptr;
        const Value* first = data && data->is_array() && !data->as_array().empty() ? &data->as_array()[0] : nullptr;
        const Value* b64 = first && first->is_object() ? first->Find("b64_json") : nullptr;
        if (b64 == nullptr || !b64->is_string()) {
          err = Status::Corruption("Unexpected SGLang image response for prompt '" + s->prompt_preview +
                                   "': " + Preview(r.body, 500));
        } else {
          s->b64 = b64->as_string();
        }
      }
    }
    if (err.ok()) {
      std::lock_guard<std::mutex> l(mu_);
      to_save_.push_back(s);
      cv_.notify_one();
    } else if (retryable && s->attempts < options_.max_attempts) {
      double backoff = options_.first_backoff_seconds * static_cast<double>(1 << (s->attempts - 1));
      if (!r.retry_after.empty()) {
        char* end = nullptr;
        double ra = std::strtod(r.retry_after.c_str(), &end);
        if (end != r.retry_after.c_str() && ra >= 0) backoff = std::min(60.0, ra);
      }
      LOG_DEBUG("image_gen: retrying a sample in " << backoff << " s: " << err.message());
      waiting_.insert(s);
      loop_->RunAfter(static_cast<uint64_t>(backoff * 1e6), [this, s] {
        waiting_.erase(s);
        queue_.push_front(s);  // retried alone, before newer samples
        Pump();
      });
    } else {
      std::string n = std::to_string(s->attempts) + " attempt" + (s->attempts > 1 ? "s" : "");
      Finish(s, err.WithContext("output '" + config_.processing.outputs[s->output_index].name + "' (" + n + ")"));
    }
    Pump();
  }

  void Finish(const std::shared_ptr<Sample>& s, Status st, Value value = Value()) {
    GenerateResult r;
    r.attempts = std::max(1, s->attempts);
    r.status = std::move(st);
    r.value = std::move(value);
    auto done = std::move(s->done);
    if (done) done(std::move(r));
  }

  // Saver thread: decode, re-encode when needed, write.
  void SaverLoop() {
    while (true) {
      std::shared_ptr<Sample> s;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return stopping_ || !to_save_.empty(); });
        if (to_save_.empty()) return;
        s = to_save_.front();
        to_save_.pop_front();
      }
      Value value;
      Status st = Save(s.get(), &value);
      const std::string& name = config_.processing.outputs[s->output_index].name;
      Finish(s, st.ok() ? st : st.WithContext("output '" + name + "'"), std::move(value));
    }
  }

  Status Save(Sample* s, Value* value) {
    auto bytes = DecodeBase64(s->b64);  // as Python's b64decode(validate=True)
    if (!bytes.ok())
      return Status::Corruption("SGLang returned invalid base64 image data: " + bytes.status().message());
    s->b64.clear();
    auto img = DecodeImage(*bytes);
    if (!img.ok()) return Status::Corruption("Could not decode SGLang image response: " + img.status().message());
    std::string out;
    if (SniffImageFormat(*bytes) == format_) {
      out = std::move(*bytes);
    } else {
      MMIRAGE_ASSIGN_OR_RETURN(out, EncodeImage(*img, format_));
    }
    const config::OutputVar& o = config_.processing.outputs[s->output_index];
    if (o.output_mode == "pil") {
      // An image value as HF datasets stores one: {"bytes": <file bytes>, "path": null} (an Image feature in HF
      // outputs; VLM outputs and custom functions accept it as an image).
      Value im = Value::EmptyObject();
      im.Set("bytes", Value::Bytes(std::move(out)));
      im.Set("path", Value());
      *value = std::move(im);
      return Status::OK();
    }
    const std::string& file = s->file;
    std::string path = output_dir_ + "/" + file;
    if (Dirname(path) != output_dir_ || file.find('/') != std::string::npos)  // by construction; checked anyway
      return Status::Internal("refusing to write outside output_dir: " + path);
    Status w = WriteFileAtomically(env_, path, out);
    if (!w.ok()) return w.WithContext("cannot write " + path);
    *value = Value(path);
    return Status::OK();
  }

  // The file name of a sample: <stem>.<ext>; when another sample of this run already took that name (a template
  // that is not unique per row), <stem>.<sample_index>.<ext>. The same sample (redone) keeps its name.
  std::string ClaimName(const Sample* s) {
    std::lock_guard<std::mutex> l(names_mu_);
    std::pair<size_t, int64_t> who{s->output_index, s->sample_index};
    std::string name = s->stem + "." + ext_;
    auto it = names_.find(name);
    if (it != names_.end() && it->second != who) {
      if (!warned_collision_) {
        LOG_WARN(loc_ << ": image_gen: filename_template gives the same name '" << name
                      << "' to several rows; adding the sample index to later ones");
        warned_collision_ = true;
      }
      name = s->stem + "." + std::to_string(s->sample_index) + "." + ext_;
    }
    names_[name] = who;
    return name;
  }

  const config::Config& config_;
  const config::ImageGenProcessor cfg_;
  const std::string loc_;
  const ImageGenStartOptions options_;
  Env* const env_;  // options_.env or Env::Default(): every file and clock access
  ImageGenUrls urls_;
  std::vector<std::string> headers_;
  std::string request_model_;
  double timeout_seconds_ = 900;
  int max_in_flight_ = 1;
  std::string output_dir_;
  std::string ext_ = "png";
  ImageFormat format_ = ImageFormat::kPng;
  double load_seconds_ = 0;
  std::unique_ptr<engine::ManagedServer> server_;
  std::unique_ptr<HttpLoop> loop_;

  // Loop thread only.
  std::deque<std::shared_ptr<Sample>> queue_;
  std::set<std::shared_ptr<Sample>> waiting_;  // in a backoff
  int in_flight_ = 0;
  std::atomic<bool> loop_stopping_{false};

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Sample>> to_save_;
  bool stopping_ = false;
  std::thread saver_;

  std::mutex names_mu_;
  std::map<std::string, std::pair<size_t, int64_t>> names_;
  bool warned_collision_ = false;
};

}  // namespace

Result<std::unique_ptr<engine::ManagedServer>> StartImageServer(const config::ImageGenSglang& s,
                                                                const std::string& log_path) {
  int port = 0;
  if (s.port) {
    port = static_cast<int>(*s.port);
  } else {
    MMIRAGE_ASSIGN_OR_RETURN(port, FindFreeLoopbackPort());
  }
  engine::ManagedServerOptions mo;
  mo.name = "sglang";
  mo.argv = {"sglang",       "serve",
             "--model-path", s.model_path,
             "--port",       std::to_string(port),
             "--num-gpus",   std::to_string(s.num_gpus)};
  if (s.dtype) {
    mo.argv.push_back("--dtype");
    mo.argv.push_back(*s.dtype);
  }
  for (const auto& a : s.extra_server_args) mo.argv.push_back(a);
  mo.port = port;
  mo.log_path = log_path;
  mo.startup_timeout_seconds = static_cast<double>(s.startup_timeout_seconds);
  LOG_INFO("starting `sglang serve` for image_gen on port " << port << " (log: " << log_path << ")");
  return engine::ManagedServer::Start(mo);
}

Result<std::unique_ptr<engine::ManagedServer>> StartSharedImageServer(const config::Config& config,
                                                                      const std::string& log_dir,
                                                                      const config::VarLookup& vars) {
  const config::Processor* p = config.FindProcessor("image_gen");
  bool used = false;
  for (const auto& o : config.processing.outputs) used = used || o.type == "image_gen";
  if (p == nullptr || !used || p->image_gen.backend != "sglang" || !p->image_gen.sglang)
    return std::unique_ptr<engine::ManagedServer>();
  if (auto given = vars("MMIRAGE_SGLANG_BASE_URL"); given && !Trim(*given).empty())
    return std::unique_ptr<engine::ManagedServer>();
  auto server = StartImageServer(*p->image_gen.sglang, JoinPath(log_dir, "sglang_image_server.log"));
  if (!server.ok()) return server.status().WithContext(p->loc.ToString() + ": processor 'image_gen'");
  return server;
}

Result<ImageGenUrls> NormalizeImageGenUrl(std::string_view url) {
  std::string u = Trim(url);
  while (!u.empty() && u.back() == '/') u.pop_back();
  if (u.empty()) return Status::InvalidArgument("the image server URL is blank");
  ImageGenUrls out;
  if (u.size() >= 3 && u.compare(u.size() - 3, 3, "/v1") == 0) {
    out.api = u;
    out.root = u.substr(0, u.size() - 3);
  } else {
    out.root = u;
    out.api = u + "/v1";
  }
  return out;
}

std::string SanitizeFileStem(std::string_view rendered) {
  std::string out;
  bool in_run = false;
  for (char c : rendered) {
    bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (ok) {
      out.push_back(c);
      in_run = false;
    } else if (!in_run) {
      out.push_back('_');
      in_run = true;
    }
  }
  size_t b = out.find_first_not_of("._"), e = out.find_last_not_of("._");
  if (b == std::string::npos) return "image";
  return out.substr(b, e - b + 1);
}

std::string SourceHash(const Value& vars) {
  if (!vars.is_object() || vars.as_object().empty()) return Sha256Hex("empty").substr(0, 8);
  std::string json;
  AppendJson(Canonical(vars), &json);
  return Sha256Hex(json).substr(0, 8);
}

Result<std::string> BuildImageRequestBody(const config::ImageGenProcessor& p, const config::OutputVar& o,
                                          const std::string& request_model, const std::string& prompt,
                                          const std::string& negative_prompt, std::optional<int64_t> seed) {
  if (Trim(prompt).empty()) return Status::InvalidArgument("prompt must be non-empty");
  Value params = p.default_sampling_params.is_object() ? p.default_sampling_params : Value::EmptyObject();
  if (o.width) params.Set("width", *o.width);
  if (o.height) params.Set("height", *o.height);
  if (o.num_inference_steps) params.Set("num_inference_steps", *o.num_inference_steps);
  if (o.guidance_scale) params.Set("guidance_scale", *o.guidance_scale);
  auto get = [&](const char* k) -> const Value* {
    const Value* v = params.Find(k);
    return v && !v->is_null() ? v : nullptr;
  };
  Value body = Value::EmptyObject();
  body.Set("prompt", prompt);
  int64_t n = 1;
  if (const Value* nv = get("n")) {
    if (nv->is_int()) n = nv->as_int();
    else if (nv->is_double()) n = static_cast<int64_t>(nv->as_double());
    else return Status::InvalidArgument("default_sampling_params.n must be an integer");
  }
  if (n != 1)
    return Status::InvalidArgument("image_gen generates one image per row: n must be 1, got " + std::to_string(n));
  body.Set("n", static_cast<int64_t>(1));
  const Value* rf = get("response_format");
  body.Set("response_format", rf ? *rf : Value("b64_json"));
  if (!request_model.empty()) body.Set("model", request_model);
  if (!negative_prompt.empty()) body.Set("negative_prompt", negative_prompt);
  if (seed) body.Set("seed", *seed);
  const Value* size = params.Find("size");
  if (size && Truthy(*size)) {
    body.Set("size", *size);
  } else if (get("width") && get("height")) {
    body.Set("size", ValueText(*get("width")) + "x" + ValueText(*get("height")));
  }
  for (const char* k : {"num_inference_steps", "guidance_scale", "output-quality", "output-compression"})
    if (const Value* v = get(k)) body.Set(k, *v);
  if (const Value* v = get("output_quality")) body.Set("output-quality", *v);
  if (const Value* v = get("output_compression")) body.Set("output-compression", *v);
  static const std::set<std::string> reserved = {"prompt",
                                                 "negative_prompt",
                                                 "model",
                                                 "n",
                                                 "response_format",
                                                 "size",
                                                 "width",
                                                 "height",
                                                 "seed",
                                                 "generator",
                                                 "num_inference_steps",
                                                 "guidance_scale",
                                                 "output-quality",
                                                 "output-compression",
                                                 "output_quality",
                                                 "output_compression"};
  for (const auto& [k, v] : params.as_object())
    if (!reserved.count(k) && !v.is_null()) body.Set(k, v);
  return ToJson(body);
}

Result<std::unique_ptr<OutputProcessor>> StartImageGenProcessor(const config::Config& config,
                                                                const config::Processor& p,
                                                                const ImageGenStartOptions& options,
                                                                std::vector<std::string>* warnings) {
  auto proc = std::make_unique<ImageGenProcessor>(config, p, options);
  MMIRAGE_TRY(proc->Start(warnings));
  return std::unique_ptr<OutputProcessor>(std::move(proc));
}

}  // namespace mmirage::process::image_gen
