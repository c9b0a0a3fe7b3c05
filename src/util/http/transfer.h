// Blocking HTTP transfers whose bodies live on disk: a POST body streamed from a file (raw, or as the file part of
// a multipart/form-data form) and a response body streamed into a file, so a 200 MB batch file never sits in
// memory. libcurl (transfer_curl.cc), TLS verification on (curl's default, never turned off here).
//
// Thread-safety: any thread; each call uses its own curl handle. Nothing is retained after a call returns.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "util/http/event_loop.h"

namespace mmirage {

struct HttpFormFile {
  std::string field;         // form field name, e.g. "file"
  std::string path;          // local file, streamed
  std::string filename;      // name sent in the part's Content-Disposition
  std::string content_type;  // e.g. "application/jsonl"
};

struct HttpTransferOptions {
  std::string body_path;                                    // POST: the raw body is this file's content
  std::vector<std::pair<std::string, std::string>> fields;  // POST multipart: plain fields, then `file`
  bool multipart = false;
  HttpFormFile file;
  // Non-empty: a response with status 200 has its body written to this file (created or truncated; flushed and
  // closed, not synced). Other responses keep their (error) body in response.body.
  std::string response_path;
};

// `request.body` is ignored when body_path or multipart is set. Transport failures (including a body file that
// cannot be opened, reported as kBroken with the reason in `error`) are in the response.
HttpResponse HttpTransfer(const HttpRequest& request, const HttpTransferOptions& options);

}  // namespace mmirage
