// DownloadFile with libcurl's easy interface. Body bytes go to `<dest>.part`
// through Env; the file lock and the terminal check are the only direct OS calls.
#include <curl/curl.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

#include "util/http/curl_global.h"
#include "util/http/download.h"
#include "util/log.h"

namespace mmirage {
namespace {

constexpr long kConnectTimeoutS = 30;
constexpr long kStallSeconds = 60;             // abort when below 1 byte/s for this long
constexpr uint64_t kBarRedrawMicros = 250000;  // terminal progress bar refresh

// Exclusive flock held until destruction (closing the descriptor releases it). fd_ < 0: not locked because the
// file system cannot lock; the download then proceeds unserialised.
class DownloadLock {
 public:
  explicit DownloadLock(int fd) : fd_(fd) {}
  DownloadLock(const DownloadLock&) = delete;
  DownloadLock& operator=(const DownloadLock&) = delete;
  ~DownloadLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_;
};

Result<std::unique_ptr<DownloadLock>> LockForDownload(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(path + ": " + std::strerror(errno));
  int rc;
  do { rc = ::flock(fd, LOCK_EX); } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    LOG_WARN(path << ": cannot lock (" << std::strerror(errno) << "); downloading without a lock");
    ::close(fd);
    fd = -1;
  }
  return std::make_unique<DownloadLock>(fd);
}

struct CurlDeleter {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// State shared with the curl callbacks of one request.
struct Transfer {
  Env* env = nullptr;
  CURL* curl = nullptr;
  std::string part_path;
  uint64_t offset = 0;                 // bytes already in .part that this response continues (0 after a 200)
  std::unique_ptr<WritableFile> file;  // opened on the first body byte, once the response code is known
  Status write_status;
  uint64_t bytes_received = 0;  // body bytes of this response
  // Progress.
  const DownloadProgress* progress = nullptr;
  std::string label;
  bool tty = false;
  bool bar_drawn = false;
  uint64_t start_us = 0;
  uint64_t last_report_us = 0;
  uint64_t total = 0;  // offset + announced length; 0 when unknown
};

// Opens .part for this response: appended to when the server honoured the range (206), rewritten otherwise.
Status OpenPart(Transfer* t) {
  long code = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
  const bool append = t->offset > 0 && code == 206;
  if (!append) t->offset = 0;
  auto f = t->env->NewWritableFile(t->part_path, append);
  if (!f.ok()) return f.status();
  t->file = std::move(*f);
  return Status::OK();
}

size_t OnBody(char* data, size_t size, size_t n, void* arg) {
  auto* t = static_cast<Transfer*>(arg);
  const size_t len = size * n;
  if (!t->file) {
    t->write_status = OpenPart(t);
    if (!t->write_status.ok()) return 0;  // curl aborts with CURLE_WRITE_ERROR
  }
  t->write_status = t->file->Append(std::string_view(data, len));
  if (!t->write_status.ok()) return 0;
  t->bytes_received += len;
  return len;
}

double RateBytesPerS(const Transfer& t, uint64_t now_us) {
  const double elapsed_s = static_cast<double>(now_us - t.start_us) / 1e6;
  return elapsed_s > 0.5 ? static_cast<double>(t.bytes_received) / elapsed_s : 0.0;
}

void Report(Transfer* t, uint64_t now_us, bool final_line) {
  const uint64_t done = t->offset + t->bytes_received;
  const std::string line = FormatDownloadProgress(done, t->total, RateBytesPerS(*t, now_us));
  if (t->tty) {
    // Trailing spaces wipe what a longer previous line left behind.
    std::fprintf(stderr, "\r%s %s   %s", t->label.c_str(), line.c_str(), final_line ? "\n" : "");
    std::fflush(stderr);
    t->bar_drawn = !final_line;
  } else {
    LOG_INFO((final_line ? "downloaded " : "downloading ") << t->label << ": " << line);
  }
}

int OnProgress(void* arg, curl_off_t dltotal, curl_off_t /*dlnow*/, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(arg);
  if (dltotal > 0) t->total = t->offset + static_cast<uint64_t>(dltotal);
  if (!t->progress->show) return 0;
  const uint64_t now = t->env->MonotonicMicros();
  const uint64_t interval = t->tty ? kBarRedrawMicros : t->progress->log_interval_ms * 1000;
  if (now - t->last_report_us >= interval) {
    t->last_report_us = now;
    Report(t, now, /*final_line=*/false);
  }
  return 0;
}

Status HttpError(long code) {
  std::string msg = "HTTP " + std::to_string(code);
  if (code == 404 || code == 410) return Status::NotFound(msg);
  if (code == 408 || code == 429 || code >= 500) return Status::Unavailable(msg);
  return Status::InvalidArgument(msg);
}

Status CurlError(CURLcode rc, const char* errbuf, bool got_body) {
  std::string detail = std::string("curl: ") + (errbuf[0] ? errbuf : curl_easy_strerror(rc));
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION: return Status::Unavailable("network unreachable (" + detail + ")");
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return Status::Unavailable((got_body ? "transfer interrupted (" : "network unreachable (") + detail + ")");
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL: return Status::InvalidArgument(detail);
    default: return Status::IOError(detail);
  }
}

struct FetchOutcome {
  Status status;
  long http_code = 0;
  bool keep_part = true;  // false: .part holds bytes that must not be resumed
};

// One GET of url into t->part_path, continuing from t->offset bytes with a Range request when t->offset > 0.
FetchOutcome Fetch(Transfer* t, const std::string& url, const std::vector<std::string>& headers) {
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return {Status::Internal("curl_easy_init failed"), 0, true};
  std::unique_ptr<curl_slist, SlistDeleter> header_list;
  for (const std::string& h : headers) {
    curl_slist* l = curl_slist_append(header_list.get(), h.c_str());
    if (l == nullptr) return {Status::Internal("curl_slist_append failed"), 0, true};
    (void)header_list.release();
    header_list.reset(l);
  }
  char errbuf[CURL_ERROR_SIZE] = {0};
  const std::string range = std::to_string(t->offset) + "-";
  CURL* h = curl.get();
  t->curl = h;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85 deprecates the bitmask options
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(h, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);  // an error body never reaches OnBody
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, kConnectTimeoutS);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, kStallSeconds);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "mmirage/" MMIRAGE_VERSION);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, header_list.get());
  // A plain Range header, not CURLOPT_RESUME_FROM: that one fails when the server answers 200, which OpenPart
  // handles by starting over.
  if (t->offset > 0) curl_easy_setopt(h, CURLOPT_RANGE, range.c_str());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, t);

  const CURLcode rc = curl_easy_perform(h);
  FetchOutcome out;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out.http_code);
  curl_off_t content_length = -1;
  curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &content_length);
  t->curl = nullptr;

  if (rc == CURLE_WRITE_ERROR && !t->write_status.ok()) {
    out.status = t->write_status;
  } else if (rc == CURLE_HTTP_RETURNED_ERROR || out.http_code >= 400) {
    out.status = HttpError(out.http_code);
    out.keep_part = false;
  } else if (rc != CURLE_OK) {
    out.status = CurlError(rc, errbuf, t->bytes_received > 0);
  } else if (content_length >= 0 && static_cast<uint64_t>(content_length) != t->bytes_received) {
    out.status = Status::Corruption("received " + std::to_string(t->bytes_received) + " bytes, expected " +
                                    std::to_string(content_length));
    out.keep_part = false;
  } else if (!t->file) {
    out.status = OpenPart(t);  // empty body: the file is empty
  }
  if (t->file) {
    if (out.status.ok()) out.status = t->file->Sync();
    Status c = t->file->Close();
    if (out.status.ok()) out.status = c;
    t->file.reset();
  }
  return out;
}

}  // namespace

std::string FormatDownloadProgress(uint64_t bytes_done, uint64_t bytes_total, double bytes_per_s) {
  constexpr double kMb = 1e6;
  char buf[160];
  std::string out;
  if (bytes_total > 0) {
    std::snprintf(buf, sizeof(buf), "%.1f%%  %.1f/%.1f MB", 100.0 * static_cast<double>(bytes_done) / bytes_total,
                  bytes_done / kMb, bytes_total / kMb);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f MB", bytes_done / kMb);
  }
  out = buf;
  if (bytes_per_s > 0) {
    std::snprintf(buf, sizeof(buf), "  %.1f MB/s", bytes_per_s / kMb);
    out += buf;
    if (bytes_total > 0) {
      const uint64_t left = bytes_total > bytes_done ? bytes_total - bytes_done : 0;
      const auto eta_s = static_cast<uint64_t>(static_cast<double>(left) / bytes_per_s + 0.5);
      if (eta_s >= 3600) {
        std::snprintf(buf, sizeof(buf), "  ETA %" PRIu64 ":%02" PRIu64 ":%02" PRIu64, eta_s / 3600, eta_s / 60 % 60,
                      eta_s % 60);
      } else {
        std::snprintf(buf, sizeof(buf), "  ETA %" PRIu64 ":%02" PRIu64, eta_s / 60, eta_s % 60);
      }
      out += buf;
    }
  }
  return out;
}

Status DownloadFile(Env* env, const std::string& url, const std::vector<std::string>& headers,
                    const std::string& dest_path, const DownloadProgress& progress) {
  internal::EnsureCurlGlobalInit();
  MMIRAGE_ASSIGN_OR_RETURN(std::unique_ptr<DownloadLock> lock, LockForDownload(dest_path + ".lock"));
  if (env->IsRegularFile(dest_path)) return Status::OK();  // another process finished it while we waited

  Transfer t;
  t.env = env;
  t.part_path = dest_path + ".part";
  t.progress = &progress;
  t.label = progress.label.empty() ? url : progress.label;
  t.tty = progress.show && ::isatty(STDERR_FILENO) == 1;
  if (env->IsRegularFile(t.part_path)) {
    auto size = env->GetFileSize(t.part_path);
    if (size.ok()) t.offset = *size;
  }
  if (progress.show) {
    LOG_INFO("downloading " << t.label << " from " << url << " to " << dest_path
                            << (t.offset > 0 ? " (resuming)" : ""));
  }
  t.start_us = t.last_report_us = env->MonotonicMicros();

  FetchOutcome out = Fetch(&t, url, headers);
  if (out.http_code == 416 && t.offset > 0) {
    // The range starts at or past the end: the .part is stale or complete but unverifiable; start over.
    (void)env->RemoveFile(t.part_path);
    t.offset = 0;
    t.bytes_received = 0;
    out = Fetch(&t, url, headers);
  }
  if (!out.status.ok()) {
    if (t.bar_drawn) std::fputs("\n", stderr);  // keep the last bar; the error goes on the next line
    if (!out.keep_part) (void)env->RemoveFile(t.part_path);
    return out.status;
  }
  if (progress.show) Report(&t, env->MonotonicMicros(), /*final_line=*/true);
  MMIRAGE_TRY(env->RenameFile(t.part_path, dest_path));
  return env->SyncDir(Dirname(dest_path));
}

}  // namespace mmirage
