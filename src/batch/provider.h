// The provider side of batch processing: OpenAI Batch (upload a JSONL file, create a batch, poll it, download its
// output and error files) and Anthropic Message Batches (create with the requests, poll, download the results),
// over libcurl with retries and backoff on 429 / 5xx / timeouts / broken connections (honouring Retry-After).
// Request bodies and results are streamed from and to files, so memory stays bounded whatever the chunk size.
//
// The API key is read once, from OPENAI_API_KEY / ANTHROPIC_API_KEY, and is never logged nor put in a message.
// Thread-safety: a BatchProvider may be used from one thread at a time. Parsing functions are pure.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::batch {

struct BatchStatus {
  std::string raw_status;      // the provider's word
  std::string status;          // completed | failed | in_progress | unknown (MMIRAGE's normalisation)
  std::string output_file_id;  // openai
  std::string error_file_id;   // openai
  std::string results_url;     // anthropic
  int64_t requests_total = 0, requests_done = 0, requests_failed = 0;  // when the provider says
};

struct SubmitResult {
  std::string batch_id;
  std::string status;  // normalised
};

// One answer from a results file, in a provider-independent form.
struct BatchAnswer {
  std::string custom_id;
  bool ok = false;
  std::string text;   // ok: the generated text
  std::string error;  // !ok: the provider's message
  std::optional<int64_t> input_tokens, output_tokens;
};

// Parses one line of a results file (OpenAI output/error file line, Anthropic results line). Errors: kCorruption
// when the line is not a JSON object with a custom_id.
Result<BatchAnswer> ParseBatchAnswer(const std::string& provider, std::string_view line);

// The API base URL requests go to: base_url without trailing '/', else the provider's
// (https://api.openai.com/v1, https://api.anthropic.com).
std::string BatchBaseUrl(const config::BatchApiProcessor& config);

// The environment variable holding the provider's key: OPENAI_API_KEY, ANTHROPIC_API_KEY.
std::string ApiKeyVariable(const std::string& provider);
// Errors: kInvalidArgument "Missing environment variable(s) for provider '<p>': ['<VAR>']" (MMIRAGE's text).
Status CheckApiKey(const std::string& provider, const config::VarLookup& vars);

class BatchProvider {
 public:
  // Reads the key (CheckApiKey's error when missing). `retry_base_seconds`: first backoff (doubling, max 60 s).
  static Result<std::unique_ptr<BatchProvider>> Create(const config::BatchApiProcessor& config,
                                                       const config::VarLookup& vars, Env* fs,
                                                       double retry_base_seconds = 1.0);
  ~BatchProvider();

  // Submits the requests in `chunk_path` (one compact JSON request per line, no trailing newline). `chunk_id`
  // names the upload (OpenAI: batch_chunk-<chunk_id>.jsonl) and goes into the metadata; `key` (unique per chunk)
  // too, so that FindSubmitted finds a batch whose creation answer was lost.
  Result<SubmitResult> Submit(const std::string& chunk_path, const std::string& chunk_id, const std::string& key);
  // The batch created with `key`, if the provider can tell (OpenAI: batch metadata; Anthropic keeps none: nullopt).
  Result<std::optional<std::string>> FindSubmitted(const std::string& key);
  Result<BatchStatus> GetStatus(const std::string& batch_id);
  // Writes every result line of a finished batch to dest_path (OpenAI: output file then error file, both when
  // present), atomically (dest_path appears complete or not at all).
  Status DownloadResults(const std::string& batch_id, const BatchStatus& status, const std::string& dest_path);

  const std::string& provider() const;

 private:
  struct Rep;
  explicit BatchProvider(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace mmirage::batch
