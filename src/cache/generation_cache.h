// GenerationCache: completions of deterministic model requests, kept across runs and configs so that a re-run
// after an edit (another output_schema, one more output) pays only for the generations that changed.
// Storage (docs/generation_cache.md; the rules in generation_cache.cc): a directory of SQLite files, one per writer
// process, sealed at Close and read-only afterwards, so SQLite's file locking is never relied on; at most max_bytes
// of sealed files are kept (least recently used go first). Every entry carries a checksum: a damaged file or entry
// is ignored with a warning — a damaged cache is a miss, never a wrong answer.
// Thread-safety: Lookup/Insert may be called from any thread (one internal mutex). Ownership: the caller owns the
// cache; Close (or destruction) finishes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/env.h"
#include "util/status.h"

namespace mmirage::cache {

enum class CacheMode { kOff, kRead, kReadWrite };
// "off" | "read" | "readwrite"; nullopt otherwise.
std::optional<CacheMode> ParseCacheMode(const std::string& s);

struct CacheOptions {
  std::string dir;  // created when missing (readwrite)
  CacheMode mode = CacheMode::kReadWrite;
  uint64_t max_bytes = 10ull << 30;  // sealed files beyond this are evicted, oldest first, at Close
  Env* env = nullptr;                // directory operations; nullptr: Env::Default(). Borrowed.
};

// A stored completion. `key` is a 32-byte digest (cache/hash.h) of everything that determines the generation.
struct CacheEntry {
  std::string text;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int finish = 0;  // the engine's FinishReason (stop 0, length 1); errors are never stored
};

struct CacheCounters {
  std::atomic<int64_t> hits{0}, misses{0}, inserts{0}, bad_entries{0};
  std::atomic<int64_t> busy_us{0};  // time spent inside Open, Lookup, Insert (with its writes) and Close
};

class GenerationCache {
 public:
  // mode kOff: REQUIRES not called (callers skip the cache). kRead: no file is created or deleted.
  // Errors: kIOError when a readwrite cache cannot create its directory or its writer file. Unreadable or
  // corrupt files are not errors (warnings, see above).
  static Result<std::unique_ptr<GenerationCache>> Open(const CacheOptions& options);
  ~GenerationCache();  // Close(), its error logged
  GenerationCache(const GenerationCache&) = delete;
  GenerationCache& operator=(const GenerationCache&) = delete;

  // The entry stored under `key`, or nullopt (absent, unreadable or failing its checksum: counted and warned).
  // In readwrite mode a hit from an older file is copied into this writer's file (LRU refresh).
  std::optional<CacheEntry> Lookup(const std::string& key);
  // Stores an entry (readwrite; a no-op in read mode). Write errors disable writing with one warning; the run
  // goes on without the cache.
  void Insert(const std::string& key, const CacheEntry& entry);

  // Writes what is pending, seals this writer's file (removed when empty), then evicts. Idempotent.
  Status Close();

  const CacheCounters& counters() const { return counters_; }
  size_t num_files() const;  // sealed files in use
  size_t num_keys() const;   // distinct keys visible

 private:
  struct Rep;
  explicit GenerationCache(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
  CacheCounters counters_;
};

// What a cache directory holds (for `mmirage cache stats`).
struct CacheDirInfo {
  int64_t sealed_files = 0, open_files = 0, corrupt_files = 0;
  int64_t entries = 0;  // rows over the readable sealed files (duplicates counted)
  int64_t distinct_entries = 0;
  uint64_t bytes = 0;  // every file of the directory
  double oldest_seal_age_seconds = 0;
  std::vector<std::string> notes;  // corrupt files, writers of other hosts, ...
};
Result<CacheDirInfo> InspectCacheDir(Env* env, const std::string& dir);

// Deletes the sealed files and the unsealed files of writers that are gone (this host); a live writer's file is
// kept. Returns how many files were deleted. A missing directory is OK (0).
Result<int64_t> ClearCacheDir(Env* env, const std::string& dir);

}  // namespace mmirage::cache
