// HTTP downloads: fetch one URL into a local file, durably and resumably (libcurl, in download_curl.cc).
//
// Thread-safety: DownloadFile may be called from several threads at once (each call uses its own curl handle);
// calls for the same dest_path are serialised by a lock file (see DownloadFile). FormatDownloadProgress is pure.
// Ownership: nothing is retained after a call returns; `env` is borrowed for the duration of the call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/env.h"
#include "util/status.h"

namespace mmirage {

// How a download reports progress on stderr.
struct DownloadProgress {
  std::string label;                 // what is downloaded, shown on progress lines; default: the URL
  bool show = true;                  // false: no progress output at all
  uint64_t log_interval_ms = 10000;  // stderr not a terminal: one log line per interval (a terminal gets a
                                     // `\r` progress bar redrawn a few times a second)
};

// Downloads `url` (GET, redirects followed) into dest_path.
//
// `headers` are extra request headers, each "Name: value" (e.g. "Authorization: Bearer …"). They are never
// logged nor put into error messages; curl does not forward them to another host on a redirect.
//
// The body is written to `<dest_path>.part`, which is synced and then renamed over dest_path, and the directory
// synced, so dest_path is either absent or complete. An existing `.part` (left by an interrupted download) is
// resumed with an HTTP Range request; if the server ignores the range, the download restarts from zero.
// Concurrent calls (threads or processes) for the same dest_path wait on `<dest_path>.lock` (flock), and a call
// that finds dest_path already present once it holds the lock returns OK without any network access.
// REQUIRES: the directory of dest_path exists.
//
// Errors (messages are one line and do not repeat the URL; the caller names what was downloaded):
//   kNotFound         "HTTP 404" (also 410)
//   kUnavailable      retryable: "HTTP 429", "HTTP 5xx"; "network unreachable (<curl error>)" when the host cannot
//                     be resolved or reached, or TLS fails; "transfer interrupted (<curl error>)" when the
//                     connection breaks or stalls (< 1 byte/s for 60 s) mid-body
//   kInvalidArgument  other HTTP >= 400 ("HTTP 401": a gated or private file needs a token); a malformed URL
//   kCorruption       the body was longer or shorter than the announced Content-Length
//   kIOError          local file errors (naming the path)
// On an HTTP error or a size mismatch the `.part` is removed (the remote file may differ from what is there); on
// a network failure it is kept for a later resume. dest_path is never created on failure. `<dest_path>.lock`
// (empty) is left in place: removing it would let a waiting process lock a file no longer on disk.
Status DownloadFile(Env* env, const std::string& url, const std::vector<std::string>& headers,
                    const std::string& dest_path, const DownloadProgress& progress);

// One progress line without the label, e.g. "45.2%  123.4/273.0 MB  12.3 MB/s  ETA 0:12" (MB = 10^6 bytes).
// bytes_total == 0 means unknown (no percent, no ETA); bytes_per_s <= 0 means no rate yet (no rate, no ETA).
// Pure.
std::string FormatDownloadProgress(uint64_t bytes_done, uint64_t bytes_total, double bytes_per_s);

}  // namespace mmirage
