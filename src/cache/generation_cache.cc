// SQLite adapter of the generation cache (layout and rules below and in docs/generation_cache.md).
// SQLite does its own file I/O on the cache files; directory listing, renames, deletes and locks go through Env.
//
// Storage: a directory of SQLite files, ONE FILE PER WRITER, so that no SQLite file is ever written by two
// processes and SQLite's file locking — unreliable on NFS/Lustre/GPFS — is never relied on:
//  - a writer (one shard process) creates `open-<pid>-<start_us>-<host>.sqlite`, holds an advisory lock on it,
//    writes its new entries (and the entries it hit, which refreshes them for LRU) in batched transactions, and
//    at Close renames it to `gen-<seal_us>-<pid>-<host>.sqlite` ("sealed"). Sealed files are never written again.
//  - readers open every sealed file read-only with SQLite's `immutable` flag (no locks, no journal), load the
//    keys into an in-memory index (newest file wins) and read entries on demand.
//  - an unsealed file left by a dead writer on this host is sealed by the next Open (under its lock, after an
//    integrity check); one from another host is left alone (`mmirage cache stats` lists it).
//  - a sealed file whose keys all live in newer files is deleted at Open; at Close, while the sealed files exceed
//    max_bytes the oldest are deleted (least recently used: entries used since then are in newer files).
// Every entry carries a checksum over its key and contents; a file that SQLite cannot read, or an entry whose
// checksum does not match, is ignored with a warning.
#include "cache/generation_cache.h"

#include <sqlite3.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <set>
#include <unordered_map>

#include "cache/hash.h"
#include "util/log.h"
#include "util/parse_int.h"
#include "util/process/process_info.h"

namespace mmirage::cache {
namespace {

constexpr const char* kFormat = "mmirage-generation-cache-1";
constexpr size_t kIndexKeyBytes = 16;  // in-memory index keys: a prefix of the 32-byte digest
constexpr size_t kFlushEntries = 64;   // pending inserts written in one transaction
constexpr uint64_t kFlushMicros = 2000000;

bool StartsWith(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
bool EndsWith(const std::string& s, const char* p) {
  std::string_view v(p);
  return s.size() >= v.size() && s.compare(s.size() - v.size(), v.size(), v) == 0;
}

// "open-<pid>-<start_us>-<host>.sqlite" → pid and host; false when the name has another shape.
bool ParseOpenName(const std::string& name, int64_t* pid, std::string* host) {
  if (!StartsWith(name, "open-") || !EndsWith(name, ".sqlite")) return false;
  size_t a = name.find('-', 5);
  if (a == std::string::npos) return false;
  size_t b = name.find('-', a + 1);
  if (b == std::string::npos) return false;
  std::optional<int64_t> pid_n = ParseInt64(std::string_view(name).substr(5, a - 5));
  if (!pid_n) return false;
  *pid = *pid_n;
  *host = name.substr(b + 1, name.size() - b - 1 - 7);
  return true;
}

// Seal time (µs) of "gen-<seal_us>-...": 0 when the name has another shape.
uint64_t SealMicros(const std::string& name) {
  if (!StartsWith(name, "gen-")) return 0;
  std::string_view rest = std::string_view(name).substr(4);
  return ParseUint64(rest.substr(0, rest.find('-'))).value_or(0);
}

std::string Join(const std::string& dir, const std::string& name) { return dir + "/" + name; }

std::string SealedName(uint64_t now_us, int64_t pid, const std::string& host) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "gen-%020" PRIu64 "-%" PRId64 "-", now_us, pid);
  return buf + host + ".sqlite";
}

std::string Checksum(const std::string& key, const CacheEntry& e) {
  Hasher h;
  h.AddString(key).AddString(e.text).AddInt(e.prompt_tokens).AddInt(e.completion_tokens).AddInt(e.finish);
  return h.Finish().substr(0, 8);
}

std::string SqliteError(sqlite3* db, const std::string& what) {
  return what + ": " + (db ? sqlite3_errmsg(db) : "out of memory");
}

struct Stmt {
  sqlite3_stmt* s = nullptr;
  ~Stmt() { sqlite3_finalize(s); }
};

// Opens a sealed file read-only without locks or journal (it is never written again).
sqlite3* OpenImmutable(const std::string& path) {
  sqlite3* db = nullptr;
  std::string uri = "file:" + path + "?immutable=1";
  if (sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    sqlite3_close(db);
    return nullptr;
  }
  return db;
}

// Opens a file this process alone writes: no file locking (unix-none VFS), exclusive locking mode so that the
// write-ahead log keeps its index in heap memory instead of a shared-memory file (which network file systems do
// not support), WAL with synchronous=NORMAL: a commit costs no fsync, a process crash loses nothing committed and
// a crash of the machine at worst the last commits (the file is checked before it is sealed). Closing the last
// connection checkpoints the log into the file and removes it.
sqlite3* OpenPrivateWritable(const std::string& path, std::string* error) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      "unix-none") != SQLITE_OK) {
    *error = SqliteError(db, path);
    sqlite3_close(db);
    return nullptr;
  }
  char* msg = nullptr;
  if (sqlite3_exec(db, "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", nullptr,
                   nullptr, &msg) != SQLITE_OK) {
    *error = path + ": " + (msg ? msg : "cannot set the journal mode");
    sqlite3_free(msg);
    sqlite3_close(db);
    return nullptr;
  }
  return db;
}

bool Exec(sqlite3* db, const char* sql, std::string* error) {
  char* msg = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    *error = msg ? msg : "sqlite error";
    sqlite3_free(msg);
    return false;
  }
  return true;
}

// Whether `db` is one of our cache files (format row present and equal).
bool HasOurFormat(sqlite3* db) {
  Stmt st;
  if (sqlite3_prepare_v2(db, "SELECT v FROM meta WHERE k='format'", -1, &st.s, nullptr) != SQLITE_OK) return false;
  if (sqlite3_step(st.s) != SQLITE_ROW) return false;
  const unsigned char* v = sqlite3_column_text(st.s, 0);
  return v != nullptr && std::string(reinterpret_cast<const char*>(v)) == kFormat;
}

bool QuickCheckOk(sqlite3* db) {
  Stmt st;
  if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st.s, nullptr) != SQLITE_OK) return false;
  if (sqlite3_step(st.s) != SQLITE_ROW) return false;
  const unsigned char* v = sqlite3_column_text(st.s, 0);
  return v != nullptr && std::string(reinterpret_cast<const char*>(v)) == "ok";
}

constexpr const char* kSelect = "SELECT text, prompt_tokens, completion_tokens, finish, sum FROM gen WHERE key = ?1";

enum class ReadResult { kFound, kAbsent, kBad };

ReadResult ReadEntry(sqlite3_stmt* get, const std::string& key, CacheEntry* out) {
  sqlite3_reset(get);
  sqlite3_bind_blob(get, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
  int rc = sqlite3_step(get);
  if (rc == SQLITE_DONE) return ReadResult::kAbsent;
  if (rc != SQLITE_ROW) return ReadResult::kBad;
  const void* t = sqlite3_column_blob(get, 0);
  out->text.assign(t ? static_cast<const char*>(t) : "", static_cast<size_t>(sqlite3_column_bytes(get, 0)));
  out->prompt_tokens = sqlite3_column_int64(get, 1);
  out->completion_tokens = sqlite3_column_int64(get, 2);
  out->finish = sqlite3_column_int(get, 3);
  const void* sum = sqlite3_column_blob(get, 4);
  std::string stored(sum ? static_cast<const char*>(sum) : "", static_cast<size_t>(sqlite3_column_bytes(get, 4)));
  sqlite3_reset(get);
  return stored == Checksum(key, *out) ? ReadResult::kFound : ReadResult::kBad;
}

// Adds the time of a scope to a counter.
struct BusyTimer {
  Env* env;
  std::atomic<int64_t>* sink;
  uint64_t start;
  BusyTimer(Env* e, std::atomic<int64_t>* s) : env(e), sink(s), start(e->MonotonicMicros()) {}
  ~BusyTimer() { *sink += static_cast<int64_t>(env->MonotonicMicros() - start); }
};

struct SealedFile {
  std::string path;
  sqlite3* db = nullptr;
  sqlite3_stmt* get = nullptr;
  bool bad = false;  // failed once: ignored from then on
};

}  // namespace

std::optional<CacheMode> ParseCacheMode(const std::string& s) {
  if (s == "off") return CacheMode::kOff;
  if (s == "read") return CacheMode::kRead;
  if (s == "readwrite") return CacheMode::kReadWrite;
  return std::nullopt;
}

struct GenerationCache::Rep {
  CacheOptions opt;
  Env* env = nullptr;
  mutable std::mutex mu;
  std::vector<SealedFile> files;
  std::unordered_map<std::string, int32_t> index;  // key prefix → file index, or -1 for this writer's file
  // This writer (readwrite only).
  sqlite3* wdb = nullptr;
  sqlite3_stmt* put = nullptr;
  sqlite3_stmt* wget = nullptr;
  std::string wpath;
  std::unique_ptr<Env::FileLock> wlock;
  std::unordered_map<std::string, CacheEntry> pending;  // full key → entry, not yet written
  uint64_t last_flush_us = 0;
  int64_t written = 0;
  bool write_failed = false;
  bool closed = false;
  std::set<std::string> warned;

  void WarnOnce(const std::string& path, const std::string& why) {
    if (warned.insert(path).second) LOG_WARN("generation cache: " << path << ": " << why << "; ignored");
  }
  void DisableWriting(const std::string& why) {
    if (!write_failed) LOG_WARN("generation cache: cannot write " << wpath << " (" << why << "); caching stops");
    write_failed = true;
    pending.clear();
  }
  void Flush();
  void LoadSealed(const std::vector<std::string>& names);
  void AdoptOrphans(const std::vector<std::string>& names);
  Status CreateWriter();
  void Evict(const std::string& keep);
};

void GenerationCache::Rep::Flush() {
  if (pending.empty() || write_failed || wdb == nullptr) return;
  std::string err;
  if (!Exec(wdb, "BEGIN", &err)) return DisableWriting(err);
  for (const auto& [key, e] : pending) {
    std::string sum = Checksum(key, e);
    sqlite3_reset(put);
    sqlite3_bind_blob(put, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
    sqlite3_bind_blob(put, 2, e.text.data(), static_cast<int>(e.text.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(put, 3, e.prompt_tokens);
    sqlite3_bind_int64(put, 4, e.completion_tokens);
    sqlite3_bind_int(put, 5, e.finish);
    sqlite3_bind_int64(put, 6, static_cast<int64_t>(env->NowMicros()));
    sqlite3_bind_blob(put, 7, sum.data(), static_cast<int>(sum.size()), SQLITE_TRANSIENT);
    if (sqlite3_step(put) != SQLITE_DONE) {
      std::string why = SqliteError(wdb, "insert");
      Exec(wdb, "ROLLBACK", &err);
      return DisableWriting(why);
    }
    ++written;
  }
  if (!Exec(wdb, "COMMIT", &err)) return DisableWriting(err);
  pending.clear();
  last_flush_us = env->MonotonicMicros();
}

// Newest first: a key's newest copy wins; a file that adds no key is shadowed by newer ones and is deleted.
void GenerationCache::Rep::LoadSealed(const std::vector<std::string>& names_in) {
  std::vector<std::string> names;
  for (const auto& n : names_in)
    if (StartsWith(n, "gen-") && EndsWith(n, ".sqlite")) names.push_back(n);
  std::sort(names.rbegin(), names.rend());
  for (const auto& name : names) {
    std::string path = Join(opt.dir, name);
    sqlite3* db = OpenImmutable(path);
    if (db == nullptr || !HasOurFormat(db)) {
      WarnOnce(path, "not a readable generation cache file (corrupt, or another format)");
      sqlite3_close(db);
      continue;
    }
    Stmt keys;
    int64_t rows = 0, fresh = 0;
    bool ok = sqlite3_prepare_v2(db, "SELECT key FROM gen", -1, &keys.s, nullptr) == SQLITE_OK;
    std::vector<std::string> added;
    int rc = SQLITE_DONE;
    while (ok && (rc = sqlite3_step(keys.s)) == SQLITE_ROW) {
      ++rows;
      const char* k = static_cast<const char*>(sqlite3_column_blob(keys.s, 0));
      int n = sqlite3_column_bytes(keys.s, 0);
      if (k == nullptr || n < static_cast<int>(kIndexKeyBytes)) continue;
      std::string prefix(k, kIndexKeyBytes);
      if (!index.count(prefix)) added.push_back(std::move(prefix));
    }
    // Finalized before any sqlite3_close below: a connection with a live statement is not closed (SQLITE_BUSY), it
    // leaked with its file descriptor (found by LeakSanitizer, scripts/sanitize.sh).
    std::string read_error = ok && rc == SQLITE_DONE ? "" : sqlite3_errmsg(db);
    sqlite3_finalize(keys.s);
    keys.s = nullptr;
    if (!ok || rc != SQLITE_DONE) {
      WarnOnce(path, "cannot be read (" + read_error + ")");
      sqlite3_close(db);
      continue;
    }
    fresh = static_cast<int64_t>(added.size());
    if (fresh == 0) {
      sqlite3_close(db);
      if (opt.mode == CacheMode::kReadWrite) {
        (void)env->RemoveFile(path);  // every key is in a newer file (or none at all)
        LOG_DEBUG("generation cache: removed " << path << " (" << rows << " entries, all in newer files)");
      }
      continue;
    }
    SealedFile f;
    f.path = path;
    f.db = db;
    if (sqlite3_prepare_v2(db, kSelect, -1, &f.get, nullptr) != SQLITE_OK) {
      WarnOnce(path, "cannot be read (" + std::string(sqlite3_errmsg(db)) + ")");
      sqlite3_close(db);
      continue;
    }
    int32_t idx = static_cast<int32_t>(files.size());
    for (auto& p : added) index.emplace(std::move(p), idx);
    files.push_back(f);
  }
}

// Seals the unsealed files of writers of this host that are gone, so that their entries are not lost.
void GenerationCache::Rep::AdoptOrphans(const std::vector<std::string>& names) {
  const std::string host = env->Hostname();
  for (const auto& name : names) {
    int64_t pid = 0;
    std::string h;
    if (!ParseOpenName(name, &pid, &h) || h != host || pid == env->Pid() || ProcessAlive(pid)) continue;
    std::string path = Join(opt.dir, name);
    auto lock = env->LockFile(path);  // a live writer (or another adopter) holds it
    if (!lock.ok()) continue;
    std::string err;
    sqlite3* db = OpenPrivateWritable(path, &err);  // rolls a hot journal back
    bool good = db != nullptr && HasOurFormat(db) && QuickCheckOk(db);
    sqlite3_close(db);
    std::string to = good ? SealedName(env->NowMicros(), pid, h) : "corrupt-" + name;
    if (!good) LOG_WARN("generation cache: " << path << " (left by a dead writer) is damaged; set aside as " << to);
    (void)env->RenameFile(path, Join(opt.dir, to));
    (void)env->RemoveFile(path + "-wal");
  }
}

Status GenerationCache::Rep::CreateWriter() {
  char buf[64];
  std::snprintf(buf, sizeof buf, "open-%d-%" PRIu64 "-", env->Pid(), env->NowMicros());
  wpath = Join(opt.dir, buf + env->Hostname() + ".sqlite");
  std::string err;
  wdb = OpenPrivateWritable(wpath, &err);
  if (wdb == nullptr) return Status::IOError("generation cache: cannot create " + err);
  auto lock = env->LockFile(wpath);
  if (lock.ok()) wlock = std::move(*lock);
  std::string sql = std::string(
                        "CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT);"
                        "INSERT INTO meta VALUES('format','") +
                    kFormat +
                    "');"
                    "CREATE TABLE gen(key BLOB PRIMARY KEY, text BLOB NOT NULL, prompt_tokens INTEGER NOT NULL, "
                    "completion_tokens INTEGER NOT NULL, finish INTEGER NOT NULL, created_us INTEGER NOT NULL, "
                    "sum BLOB NOT NULL) WITHOUT ROWID;";
  if (!Exec(wdb, sql.c_str(), &err)) return Status::IOError("generation cache: " + wpath + ": " + err);
  if (sqlite3_prepare_v2(wdb, "INSERT OR REPLACE INTO gen VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)", -1, &put, nullptr) !=
          SQLITE_OK ||
      sqlite3_prepare_v2(wdb, kSelect, -1, &wget, nullptr) != SQLITE_OK) {
    return Status::IOError(SqliteError(wdb, "generation cache: " + wpath));
  }
  last_flush_us = env->MonotonicMicros();
  return Status::OK();
}

// Oldest sealed files go first while the directory's sealed files exceed max_bytes; `keep` is never deleted.
void GenerationCache::Rep::Evict(const std::string& keep) {
  auto names = env->GetChildren(opt.dir);
  if (!names.ok()) return;
  std::vector<std::pair<std::string, uint64_t>> sealed;
  uint64_t total = 0;
  for (const auto& n : *names) {
    if (!StartsWith(n, "gen-") || !EndsWith(n, ".sqlite")) continue;
    auto size = env->GetFileSize(Join(opt.dir, n));
    if (!size.ok()) continue;
    sealed.emplace_back(n, *size);
    total += *size;
  }
  std::sort(sealed.begin(), sealed.end());
  for (const auto& [n, size] : sealed) {
    if (total <= opt.max_bytes) break;
    if (n == keep) continue;
    if (env->RemoveFile(Join(opt.dir, n)).ok()) {
      total -= size;
      LOG_INFO("generation cache: evicted " << n << " (" << size << " bytes; cache_max_gb reached)");
    }
  }
}

GenerationCache::GenerationCache(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}

GenerationCache::~GenerationCache() {
  Status s = Close();
  if (!s.ok()) LOG_WARN(s.message());
  std::lock_guard<std::mutex> l(rep_->mu);
  for (auto& f : rep_->files) {
    sqlite3_finalize(f.get);
    sqlite3_close(f.db);
  }
}

Result<std::unique_ptr<GenerationCache>> GenerationCache::Open(const CacheOptions& options) {
  auto rep = std::make_unique<Rep>();
  rep->opt = options;
  rep->env = options.env ? options.env : Env::Default();
  Env* env = rep->env;
  const uint64_t start_us = env->MonotonicMicros();
  if (options.mode == CacheMode::kReadWrite) {
    Status s = env->CreateDirs(options.dir);
    if (!s.ok()) return s.WithContext("generation cache: cannot create " + options.dir);
  }
  std::vector<std::string> names;
  if (env->IsDirectory(options.dir)) {
    auto children = env->GetChildren(options.dir);
    if (!children.ok()) return children.status().WithContext("generation cache");
    names = std::move(*children);
  }
  if (options.mode == CacheMode::kReadWrite) {
    rep->AdoptOrphans(names);
    auto again = env->GetChildren(options.dir);
    if (again.ok()) names = std::move(*again);
  }
  rep->LoadSealed(names);
  if (options.mode == CacheMode::kReadWrite) MMIRAGE_TRY(rep->CreateWriter());
  std::unique_ptr<GenerationCache> c(new GenerationCache(std::move(rep)));
  c->counters_.busy_us += static_cast<int64_t>(env->MonotonicMicros() - start_us);
  return c;
}

std::optional<CacheEntry> GenerationCache::Lookup(const std::string& key) {
  Rep& r = *rep_;
  BusyTimer t(r.env, &counters_.busy_us);
  std::lock_guard<std::mutex> l(r.mu);
  if (key.size() < kIndexKeyBytes) return std::nullopt;
  auto it = r.index.find(key.substr(0, kIndexKeyBytes));
  if (it == r.index.end()) {
    ++counters_.misses;
    return std::nullopt;
  }
  CacheEntry e;
  if (it->second < 0) {  // this writer's own entry (an identical request earlier in this run)
    if (auto p = r.pending.find(key); p != r.pending.end()) {
      ++counters_.hits;
      return p->second;
    }
    if (r.wget != nullptr && ReadEntry(r.wget, key, &e) == ReadResult::kFound) {
      ++counters_.hits;
      return e;
    }
    ++counters_.misses;
    return std::nullopt;
  }
  SealedFile& f = r.files[static_cast<size_t>(it->second)];
  ReadResult rr = f.bad ? ReadResult::kBad : ReadEntry(f.get, key, &e);
  if (rr != ReadResult::kFound) {
    ++counters_.misses;
    if (rr == ReadResult::kBad) {
      ++counters_.bad_entries;
      r.WarnOnce(f.path, "an entry is damaged (checksum or SQLite error)");
    }
    return std::nullopt;
  }
  ++counters_.hits;
  if (r.wdb != nullptr && !r.write_failed && !r.closed) {  // refresh: the entry now also lives in the newest file
    r.pending[key] = e;
    it->second = -1;
    if (r.pending.size() >= kFlushEntries) r.Flush();
  }
  return e;
}

void GenerationCache::Insert(const std::string& key, const CacheEntry& entry) {
  Rep& r = *rep_;
  BusyTimer t(r.env, &counters_.busy_us);
  std::lock_guard<std::mutex> l(r.mu);
  if (r.wdb == nullptr || r.write_failed || r.closed || key.size() < kIndexKeyBytes) return;
  r.pending[key] = entry;
  r.index[key.substr(0, kIndexKeyBytes)] = -1;
  ++counters_.inserts;
  if (r.pending.size() >= kFlushEntries || r.env->MonotonicMicros() - r.last_flush_us > kFlushMicros) r.Flush();
}

Status GenerationCache::Close() {
  Rep& r = *rep_;
  BusyTimer t(r.env, &counters_.busy_us);
  std::lock_guard<std::mutex> l(r.mu);
  if (r.closed) return Status::OK();
  r.closed = true;
  if (r.wdb == nullptr) return Status::OK();
  r.Flush();
  sqlite3_finalize(r.put);
  sqlite3_finalize(r.wget);
  r.put = r.wget = nullptr;
  int rc = sqlite3_close(r.wdb);
  r.wdb = nullptr;
  for (auto& [k, idx] : r.index)
    if (idx < 0) idx = static_cast<int32_t>(r.files.size());  // no longer readable through the writer
  r.files.push_back(SealedFile{r.wpath, nullptr, nullptr, true});
  if (r.written == 0 || r.write_failed || rc != SQLITE_OK) {
    (void)r.env->RemoveFile(r.wpath);
    (void)r.env->RemoveFile(r.wpath + "-wal");
    r.wlock.reset();
    return Status::OK();
  }
  int64_t pid = 0;
  std::string host;
  ParseOpenName(r.wpath.substr(r.wpath.rfind('/') + 1), &pid, &host);
  std::string sealed = SealedName(r.env->NowMicros(), pid, host);
  Status s = r.env->RenameFile(r.wpath, Join(r.opt.dir, sealed));
  r.wlock.reset();
  if (!s.ok()) return s.WithContext("generation cache: cannot seal " + r.wpath);
  (void)r.env->SyncDir(r.opt.dir);
  r.Evict(sealed);
  return Status::OK();
}

size_t GenerationCache::num_files() const {
  std::lock_guard<std::mutex> l(rep_->mu);
  return rep_->files.size();
}

size_t GenerationCache::num_keys() const {
  std::lock_guard<std::mutex> l(rep_->mu);
  return rep_->index.size();
}

Result<CacheDirInfo> InspectCacheDir(Env* env, const std::string& dir) {
  CacheDirInfo info;
  if (!env->IsDirectory(dir)) return info;
  MMIRAGE_ASSIGN_OR_RETURN(auto names, env->GetChildren(dir));
  std::set<std::string> distinct;
  uint64_t now = env->NowMicros(), oldest = 0;
  const std::string host = env->Hostname();
  for (const auto& n : names) {
    std::string path = Join(dir, n);
    if (auto size = env->GetFileSize(path); size.ok()) info.bytes += *size;
    int64_t pid = 0;
    std::string h;
    if (ParseOpenName(n, &pid, &h)) {
      ++info.open_files;
      bool live = h == host && ProcessAlive(pid);
      if (h != host) info.notes.push_back(n + ": unsealed, written on host " + h + " (sealed there, or cleared)");
      else if (!live) info.notes.push_back(n + ": unsealed, its writer is gone (sealed by the next run)");
      continue;
    }
    if (StartsWith(n, "corrupt-")) {
      ++info.corrupt_files;
      info.notes.push_back(n + ": damaged, ignored");
      continue;
    }
    if (!StartsWith(n, "gen-") || !EndsWith(n, ".sqlite")) continue;
    sqlite3* db = OpenImmutable(path);
    Stmt keys;
    bool ok = db != nullptr && HasOurFormat(db) &&
              sqlite3_prepare_v2(db, "SELECT key FROM gen", -1, &keys.s, nullptr) == SQLITE_OK;
    int rc = SQLITE_DONE;
    int64_t rows = 0;
    while (ok && (rc = sqlite3_step(keys.s)) == SQLITE_ROW) {
      ++rows;
      const char* k = static_cast<const char*>(sqlite3_column_blob(keys.s, 0));
      distinct.insert(std::string(k ? k : "", static_cast<size_t>(sqlite3_column_bytes(keys.s, 0))));
    }
    sqlite3_finalize(keys.s);
    keys.s = nullptr;
    sqlite3_close(db);
    if (!ok || rc != SQLITE_DONE) {
      ++info.corrupt_files;
      info.notes.push_back(n + ": not a readable generation cache file, ignored");
      continue;
    }
    ++info.sealed_files;
    info.entries += rows;
    uint64_t seal = SealMicros(n);
    if (seal > 0 && (oldest == 0 || seal < oldest)) oldest = seal;
  }
  info.distinct_entries = static_cast<int64_t>(distinct.size());
  if (oldest > 0 && now > oldest) info.oldest_seal_age_seconds = static_cast<double>(now - oldest) / 1e6;
  return info;
}

Result<int64_t> ClearCacheDir(Env* env, const std::string& dir) {
  if (!env->IsDirectory(dir)) return static_cast<int64_t>(0);
  MMIRAGE_ASSIGN_OR_RETURN(auto names, env->GetChildren(dir));
  const std::string host = env->Hostname();
  int64_t removed = 0;
  for (const auto& n : names) {
    int64_t pid = 0;
    std::string h;
    if (ParseOpenName(n, &pid, &h) && h == host && ProcessAlive(pid)) continue;  // a live writer's file
    if (ParseOpenName(n, &pid, &h) && h != host) continue;                       // may be live elsewhere
    bool ours = (StartsWith(n, "gen-") || StartsWith(n, "open-") || StartsWith(n, "corrupt-")) &&
                (EndsWith(n, ".sqlite") || EndsWith(n, ".sqlite-wal") || EndsWith(n, ".sqlite-journal"));
    if (!ours) continue;
    MMIRAGE_TRY(env->RemoveFile(Join(dir, n)));
    ++removed;
  }
  return removed;
}

}  // namespace mmirage::cache
