#include "batch/provider.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "data/json.h"
#include "batch/request.h"
#include "util/http/transfer.h"
#include "util/log.h"

namespace mmirage::batch {
namespace {

constexpr int kMaxAttempts = 8;            // per HTTP call
constexpr double kMaxBackoffSeconds = 60;  // between attempts
constexpr double kMaxRetryAfterSeconds = 600;

const Value* Path(const Value& v, std::initializer_list<const char*> keys) {
  const Value* cur = &v;
  for (const char* k : keys) {
    if (cur == nullptr || !cur->is_object()) return nullptr;
    cur = cur->Find(k);
  }
  return cur;
}

std::string Str(const Value* v) { return v != nullptr && v->is_string() ? v->as_string() : ""; }

std::optional<int64_t> Int(const Value* v) {
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->is_int() ? v->as_int() : static_cast<int64_t>(v->as_double());
}

// The message of an API error body ({"error": {"message": …}}), else the body's start.
std::string ErrorText(const std::string& body) {
  auto v = ParseJson(body);
  if (v.ok()) {
    std::string m = Str(Path(*v, {"error", "message"}));
    if (!m.empty()) return m;
  }
  std::string s = body.substr(0, 200);
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

std::string NormalizeOpenAi(const std::string& s) {
  if (s == "completed") return "completed";
  if (s == "failed" || s == "expired" || s == "cancelled") return "failed";
  if (s == "validating" || s == "in_progress" || s == "finalizing" || s == "cancelling") return "in_progress";
  return "unknown";
}

std::string NormalizeAnthropic(const std::string& s) {
  if (s == "ended") return "completed";
  if (s == "in_progress" || s == "canceling") return "in_progress";
  return "unknown";
}

}  // namespace

std::string ApiKeyVariable(const std::string& provider) {
  std::string v;
  for (char c : provider)
    v.push_back(std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(c)) : '_');
  return v + "_API_KEY";
}

Status CheckApiKey(const std::string& provider, const config::VarLookup& vars) {
  std::string var = ApiKeyVariable(provider);
  auto v = vars ? vars(var) : std::nullopt;
  bool blank = !v || v->find_first_not_of(" \t\r\n") == std::string::npos;
  if (blank) {
    return Status::InvalidArgument("Missing environment variable(s) for provider '" + provider + "': ['" + var + "']");
  }
  return Status::OK();
}

Result<BatchAnswer> ParseBatchAnswer(const std::string& provider, std::string_view line) {
  auto parsed = ParseJson(line);
  if (!parsed.ok() || !parsed->is_object()) return Status::Corruption("result line is not a JSON object");
  const Value& row = *parsed;
  BatchAnswer a;
  a.custom_id = Str(row.Find("custom_id"));
  if (a.custom_id.empty()) return Status::Corruption("result line has no custom_id");
  if (provider == "openai") {
    const Value* body = Path(row, {"response", "body"});
    int64_t code = Int(Path(row, {"response", "status_code"})).value_or(200);
    std::string err = Str(Path(row, {"response", "body", "error", "message"}));
    if (err.empty()) err = Str(Path(row, {"error", "message"}));  // a request the batch could not run
    if (const Value* u = body ? body->Find("usage") : nullptr; u != nullptr) {
      auto in = Int(u->Find("prompt_tokens")), out = Int(u->Find("completion_tokens"));
      if (in && out) {
        a.input_tokens = in;
        a.output_tokens = out;
      }
    }
    if (!err.empty() || code >= 400) {
      a.error = err.empty() ? "HTTP " + std::to_string(code) : err;
      return a;
    }
    const Value* choice0 = nullptr;
    if (const Value* ch = body ? body->Find("choices") : nullptr; ch && ch->is_array() && ch->size() > 0)
      choice0 = &ch->as_array()[0];
    const Value* content = choice0 ? Path(*choice0, {"message", "content"}) : nullptr;
    if (content != nullptr && content->is_string()) {
      a.text = content->as_string();
    } else if (const Value* t = choice0 ? choice0->Find("text") : nullptr; t && t->is_string()) {
      a.text = t->as_string();
    } else if (const Value* bt = body ? body->Find("text") : nullptr; bt && bt->is_string()) {
      a.text = bt->as_string();
    } else {
      a.error = "the response holds no generated text";
      return a;
    }
    a.ok = true;
    return a;
  }
  // Anthropic: {"custom_id", "result": {"type": succeeded|errored|canceled|expired, "message"|"error"}}.
  const Value* result = row.Find("result");
  std::string type = Str(result ? result->Find("type") : nullptr);
  if (type == "errored" || type == "canceled" || type == "expired") {
    std::string m = Str(Path(*result, {"error", "error", "message"}));
    a.error = m.empty() ? "Request " + type : m;
    return a;
  }
  const Value* msg = result ? result->Find("message") : nullptr;
  if (msg != nullptr && msg->is_object()) {
    if (const Value* c = msg->Find("content"); c && c->is_array()) {
      for (const Value& b : c->as_array())
        if (Str(b.Find("type")) == "text") a.text += Str(b.Find("text"));
    }
    if (const Value* u = msg->Find("usage"); u && u->is_object()) {
      auto in = Int(u->Find("input_tokens")), out = Int(u->Find("output_tokens"));
      if (in && out) {
        a.input_tokens = in;
        a.output_tokens = out;
      }
    }
  }
  if (type != "succeeded") {
    a.error = type.empty() ? "the result has no type" : "unexpected result type '" + type + "'";
    return a;
  }
  a.ok = true;
  return a;
}

struct BatchProvider::Rep {
  config::BatchApiProcessor config;
  std::string key;
  std::string base;  // without trailing '/'
  Env* fs = nullptr;
  double retry_base_seconds = 1;
  bool openai() const { return config.provider == "openai"; }

  std::vector<std::string> Headers(bool json) const {
    std::vector<std::string> h;
    if (openai()) {
      h.push_back("Authorization: Bearer " + key);
    } else {
      h.push_back("x-api-key: " + key);
      h.push_back("anthropic-version: 2023-06-01");
    }
    if (json) h.push_back("Content-Type: application/json");
    return h;
  }

  // One call with retries. `what` names it in errors ("creating the batch"); never the key, never the headers.
  Result<HttpResponse> Call(HttpRequest req, const HttpTransferOptions& opt, const std::string& what,
                            const std::function<bool()>& before_retry = nullptr) {
    req.timeout_seconds = config.timeout_seconds.value_or(600);
    std::string last;
    for (int attempt = 1;; ++attempt) {
      HttpResponse r = HttpTransfer(req, opt);
      double wait = std::min(kMaxBackoffSeconds, retry_base_seconds * std::pow(2.0, attempt - 1));
      if (r.transport == HttpTransport::kOk) {
        if (r.status_code >= 200 && r.status_code < 300) return r;
        std::string msg = "HTTP " + std::to_string(r.status_code) + ": " + ErrorText(r.body);
        if (r.status_code == 401 || r.status_code == 403) {
          return Status::InvalidArgument(config.provider + " " + what + ": authentication failed (" + msg +
                                         "); check " + ApiKeyVariable(config.provider));
        }
        if (r.status_code != 429 && r.status_code != 408 && r.status_code < 500) {
          return Status::InvalidArgument(config.provider + " " + what + ": " + msg);
        }
        if (!r.retry_after.empty()) {
          char* end = nullptr;
          double s = std::strtod(r.retry_after.c_str(), &end);
          if (end != r.retry_after.c_str() && s >= 0) wait = std::min(s, kMaxRetryAfterSeconds);
        }
        last = msg;
      } else {
        last = r.error;
      }
      if (attempt >= kMaxAttempts) {
        return Status::Unavailable(config.provider + " " + what + ": " + last + " (after " + std::to_string(attempt) +
                                   " attempts)");
      }
      LOG_WARN(config.provider << " " << what << ": " << last << "; retrying in " << FormatDouble(wait) << " s");
      fs->SleepMicros(static_cast<uint64_t>(wait * 1e6));
      if (before_retry && before_retry()) return Status::Unavailable("__found__");
    }
  }

  Result<Value> CallJson(HttpRequest req, const std::string& what, const HttpTransferOptions& opt = {}) {
    MMIRAGE_ASSIGN_OR_RETURN(HttpResponse r, Call(std::move(req), opt, what));
    auto v = ParseJson(r.body);
    if (!v.ok() || !v->is_object()) {
      return Status::Corruption(config.provider + " " + what + ": the answer is not a JSON object");
    }
    return *v;
  }
};

BatchProvider::BatchProvider(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
BatchProvider::~BatchProvider() = default;

const std::string& BatchProvider::provider() const { return rep_->config.provider; }

std::string BatchBaseUrl(const config::BatchApiProcessor& config) {
  std::string base = config.base_url.value_or("");
  if (base.empty()) base = config.provider == "openai" ? "https://api.openai.com/v1" : "https://api.anthropic.com";
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

Result<std::unique_ptr<BatchProvider>> BatchProvider::Create(const config::BatchApiProcessor& config,
                                                             const config::VarLookup& vars, Env* fs,
                                                             double retry_base_seconds) {
  MMIRAGE_TRY(CheckApiKey(config.provider, vars));
  auto rep = std::make_unique<Rep>();
  rep->config = config;
  std::string key = *vars(ApiKeyVariable(config.provider));
  size_t b = key.find_first_not_of(" \t\r\n"), e = key.find_last_not_of(" \t\r\n");
  rep->key = key.substr(b, e - b + 1);
  rep->base = BatchBaseUrl(config);
  rep->fs = fs;
  rep->retry_base_seconds = retry_base_seconds;
  return std::unique_ptr<BatchProvider>(new BatchProvider(std::move(rep)));
}

Result<SubmitResult> BatchProvider::Submit(const std::string& chunk_path, const std::string& chunk_id,
                                           const std::string& key) {
  Rep& r = *rep_;
  SubmitResult out;
  // A create whose answer was lost (timeout, broken connection) may have succeeded: look before sending again.
  std::optional<std::string> found;
  auto look = [&]() -> bool {
    auto f = FindSubmitted(key);
    if (f.ok() && *f) found = **f;
    return found.has_value();
  };
  if (r.openai()) {
    HttpRequest up;
    up.method = "POST";
    up.url = r.base + "/files";
    up.headers = r.Headers(false);
    HttpTransferOptions uo;
    uo.multipart = true;
    uo.fields = {{"purpose", "batch"}};
    uo.file = HttpFormFile{"file", chunk_path, "batch_chunk-" + chunk_id + ".jsonl", "application/jsonl"};
    MMIRAGE_ASSIGN_OR_RETURN(Value file, r.CallJson(up, "uploading " + chunk_id, uo));
    std::string file_id = Str(file.Find("id"));
    if (file_id.empty()) return Status::Corruption("openai uploading " + chunk_id + ": the answer has no file id");
    Value meta = r.config.metadata.is_object() ? r.config.metadata : Value::EmptyObject();
    meta.Set("chunk_id", chunk_id);
    meta.Set("mmirage_chunk_key", key);
    Value body = Value::EmptyObject();
    body.Set("input_file_id", file_id);
    body.Set("endpoint", r.config.batch_endpoint);
    body.Set("completion_window", r.config.completion_window);
    body.Set("metadata", meta);
    HttpRequest cr;
    cr.method = "POST";
    cr.url = r.base + "/batches";
    cr.headers = r.Headers(true);
    cr.body = ToJson(body);
    auto resp = r.Call(cr, {}, "creating the batch of " + chunk_id, look);
    if (!resp.ok() && found) return SubmitResult{*found, "in_progress"};
    if (!resp.ok()) return resp.status();
    auto v = ParseJson(resp->body);
    if (!v.ok() || Str(v->Find("id")).empty()) return Status::Corruption("openai creating a batch: no batch id");
    return SubmitResult{Str(v->Find("id")), NormalizeOpenAi(Str(v->Find("status")))};
  }
  // Anthropic: {"requests": [<line>, …]} streamed from a file built next to the chunk.
  std::string body_path = chunk_path + ".body.json";
  {
    MMIRAGE_ASSIGN_OR_RETURN(auto in, r.fs->NewSequentialFile(chunk_path));
    MMIRAGE_ASSIGN_OR_RETURN(auto out, r.fs->NewWritableFile(body_path));
    MMIRAGE_TRY(out->Append("{\"requests\":["));
    std::string buf(1 << 16, '\0');
    while (true) {
      MMIRAGE_ASSIGN_OR_RETURN(size_t n, in->Read(buf.size(), buf.data()));
      if (n == 0) break;
      std::string piece = buf.substr(0, n);
      for (char& c : piece)
        if (c == '\n') c = ',';  // lines hold compact JSON: a newline only separates requests
      MMIRAGE_TRY(out->Append(piece));
    }
    MMIRAGE_TRY(out->Append("]}"));
    MMIRAGE_TRY(out->Close());
  }
  HttpRequest cr;
  cr.method = "POST";
  cr.url = r.base + "/v1/messages/batches";
  cr.headers = r.Headers(true);
  HttpTransferOptions o;
  o.body_path = body_path;
  auto resp = r.Call(cr, o, "creating the batch of " + chunk_id);
  (void)r.fs->RemoveFile(body_path);
  if (!resp.ok()) return resp.status();
  auto v = ParseJson(resp->body);
  if (!v.ok() || Str(v->Find("id")).empty()) return Status::Corruption("anthropic creating a batch: no batch id");
  out.batch_id = Str(v->Find("id"));
  out.status = NormalizeAnthropic(Str(v->Find("processing_status")));
  return out;
}

Result<std::optional<std::string>> BatchProvider::FindSubmitted(const std::string& key) {
  Rep& r = *rep_;
  if (!r.openai()) return std::optional<std::string>();
  std::string after;
  for (int page = 0; page < 50; ++page) {  // newest first; ours is recent
    HttpRequest req;
    req.method = "GET";
    req.url = r.base + "/batches?limit=100" + (after.empty() ? "" : "&after=" + after);
    req.headers = r.Headers(false);
    MMIRAGE_ASSIGN_OR_RETURN(Value v, r.CallJson(req, "listing batches"));
    const Value* data = v.Find("data");
    if (data == nullptr || !data->is_array() || data->size() == 0) break;
    for (const Value& b : data->as_array()) {
      if (Str(Path(b, {"metadata", "mmirage_chunk_key"})) == key) return std::optional<std::string>(Str(b.Find("id")));
      after = Str(b.Find("id"));
    }
    const Value* more = v.Find("has_more");
    if (more == nullptr || !more->is_bool() || !more->as_bool()) break;
  }
  return std::optional<std::string>();
}

Result<BatchStatus> BatchProvider::GetStatus(const std::string& batch_id) {
  Rep& r = *rep_;
  HttpRequest req;
  req.method = "GET";
  req.url = r.base + (r.openai() ? "/batches/" : "/v1/messages/batches/") + batch_id;
  req.headers = r.Headers(false);
  MMIRAGE_ASSIGN_OR_RETURN(Value v, r.CallJson(req, "checking batch " + batch_id));
  BatchStatus s;
  if (r.openai()) {
    s.raw_status = Str(v.Find("status"));
    s.status = NormalizeOpenAi(s.raw_status);
    s.output_file_id = Str(v.Find("output_file_id"));
    s.error_file_id = Str(v.Find("error_file_id"));
    s.requests_total = Int(Path(v, {"request_counts", "total"})).value_or(0);
    s.requests_done = Int(Path(v, {"request_counts", "completed"})).value_or(0);
    s.requests_failed = Int(Path(v, {"request_counts", "failed"})).value_or(0);
  } else {
    s.raw_status = Str(v.Find("processing_status"));
    s.status = NormalizeAnthropic(s.raw_status);
    s.results_url = Str(v.Find("results_url"));
    int64_t ok = Int(Path(v, {"request_counts", "succeeded"})).value_or(0);
    int64_t bad = Int(Path(v, {"request_counts", "errored"})).value_or(0) +
                  Int(Path(v, {"request_counts", "canceled"})).value_or(0) +
                  Int(Path(v, {"request_counts", "expired"})).value_or(0);
    s.requests_done = ok + bad;
    s.requests_failed = bad;
    s.requests_total = s.requests_done + Int(Path(v, {"request_counts", "processing"})).value_or(0);
  }
  return s;
}

Status BatchProvider::DownloadResults(const std::string& batch_id, const BatchStatus& status,
                                      const std::string& dest_path) {
  Rep& r = *rep_;
  std::vector<std::string> urls;
  if (r.openai()) {
    for (const std::string* id : {&status.output_file_id, &status.error_file_id})
      if (!id->empty()) urls.push_back(r.base + "/files/" + *id + "/content");
  } else {
    urls.push_back(!status.results_url.empty() ? status.results_url
                                               : r.base + "/v1/messages/batches/" + batch_id + "/results");
  }
  std::string tmp = dest_path + ".tmp";
  MMIRAGE_ASSIGN_OR_RETURN(auto out, r.fs->NewWritableFile(tmp));
  for (size_t i = 0; i < urls.size(); ++i) {
    std::string part = dest_path + ".part" + std::to_string(i);
    HttpRequest req;
    req.method = "GET";
    req.url = urls[i];
    req.headers = r.Headers(false);
    HttpTransferOptions o;
    o.response_path = part;
    MMIRAGE_TRY(r.Call(req, o, "downloading the results of " + batch_id).status());
    MMIRAGE_ASSIGN_OR_RETURN(auto in, r.fs->NewSequentialFile(part));
    std::string buf(1 << 16, '\0');
    char last = '\n';
    while (true) {
      MMIRAGE_ASSIGN_OR_RETURN(size_t n, in->Read(buf.size(), buf.data()));
      if (n == 0) break;
      MMIRAGE_TRY(out->Append(std::string_view(buf.data(), n)));
      last = buf[n - 1];
    }
    if (last != '\n') MMIRAGE_TRY(out->Append("\n"));
    (void)r.fs->RemoveFile(part);
  }
  MMIRAGE_TRY(out->Sync());
  MMIRAGE_TRY(out->Close());
  MMIRAGE_TRY(r.fs->RenameFile(tmp, dest_path));
  return Status::OK();
}

}  // namespace mmirage::batch
