// Storage of the generation cache under concurrency: W writer processes storing E entries each at once, then one
// reader opening everything and looking every key up — our layout (one SQLite file per writer, immutable readers)
// against the obvious alternative, one shared SQLite database in WAL mode with a busy timeout (which needs
// working POSIX locks and shared memory, i.e. a local file system).
//
// Prints JSON: per layout, writers' wall seconds, inserts/s over all writers, reader open seconds and lookups/s,
// and the entries found (must be W × E for both).
// Usage: mmirage-bench-cache [--writers W] [--entries E] [--dir D]
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cache/generation_cache.h"
#include "cache/hash.h"
#include "util/env.h"

using namespace mmirage;

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string Key(int w, int i) {
  cache::Hasher h;
  h.AddInt(w).AddInt(i);
  return h.Finish();
}

std::string Text(int w, int i) {
  return "completion " + std::to_string(w) + "/" + std::to_string(i) + std::string(400, 'x');
}

int OursWriter(const std::string& dir, int w, int entries) {
  cache::CacheOptions o;
  o.dir = dir;
  auto c = cache::GenerationCache::Open(o);
  if (!c.ok()) return 2;
  for (int i = 0; i < entries; ++i) {
    cache::CacheEntry e;
    e.text = Text(w, i);
    e.completion_tokens = 100;
    (*c)->Insert(Key(w, i), e);
  }
  return (*c)->Close().ok() ? 0 : 3;
}

int SharedWriter(const std::string& path, int w, int entries) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return 2;
  sqlite3_busy_timeout(db, 60000);
  sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", nullptr, nullptr, nullptr);
  sqlite3_stmt* put = nullptr;
  sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO gen VALUES(?1, ?2)", -1, &put, nullptr);
  for (int i = 0; i < entries; i += 64) {  // the same batching as ours: 64 entries per transaction
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) return 4;
    for (int k = i; k < std::min(entries, i + 64); ++k) {
      std::string key = Key(w, k), text = Text(w, k);
      sqlite3_reset(put);
      sqlite3_bind_blob(put, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
      sqlite3_bind_blob(put, 2, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
      if (sqlite3_step(put) != SQLITE_DONE) return 5;
    }
    if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) return 6;
  }
  sqlite3_finalize(put);
  sqlite3_close(db);
  return 0;
}

template <typename F>
double RunWriters(int writers, F f) {
  double t0 = Now();
  std::vector<pid_t> kids;
  for (int w = 0; w < writers; ++w) {
    pid_t p = fork();
    if (p == 0) _exit(f(w));
    kids.push_back(p);
  }
  for (pid_t p : kids) {
    int st = 0;
    waitpid(p, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      std::fprintf(stderr, "a writer failed (status %d)\n", st);
      std::exit(1);
    }
  }
  return Now() - t0;
}

}  // namespace

int main(int argc, char** argv) {
  int writers = 4, entries = 5000;
  std::string dir = "/tmp/mmirage-cache-store-bench-" + std::to_string(getpid());
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--writers")) writers = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--entries")) entries = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--dir")) dir = argv[i + 1];
  }
  Env* env = Env::Default();
  (void)env->RemoveAll(dir);
  (void)env->CreateDirs(dir + "/ours");
  (void)env->CreateDirs(dir + "/shared");
  const double total = static_cast<double>(writers) * entries;

  // Ours.
  double w_ours = RunWriters(writers, [&](int w) { return OursWriter(dir + "/ours", w, entries); });
  double t0 = Now();
  cache::CacheOptions ro;
  ro.dir = dir + "/ours";
  ro.mode = cache::CacheMode::kRead;
  auto reader = cache::GenerationCache::Open(ro);
  double open_ours = Now() - t0;
  int64_t found_ours = 0;
  t0 = Now();
  for (int w = 0; w < writers; ++w)
    for (int i = 0; i < entries; ++i) found_ours += (*reader)->Lookup(Key(w, i)).has_value();
  double look_ours = Now() - t0;

  // One shared WAL database.
  std::string shared = dir + "/shared/cache.sqlite";
  sqlite3* db = nullptr;
  sqlite3_open(shared.c_str(), &db);
  sqlite3_exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE gen(key BLOB PRIMARY KEY, text BLOB) WITHOUT ROWID;", nullptr,
               nullptr, nullptr);
  sqlite3_close(db);
  double w_shared = RunWriters(writers, [&](int w) { return SharedWriter(shared, w, entries); });
  t0 = Now();
  sqlite3_open_v2(shared.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* get = nullptr;
  sqlite3_prepare_v2(db, "SELECT text FROM gen WHERE key = ?1", -1, &get, nullptr);
  double open_shared = Now() - t0;
  int64_t found_shared = 0;
  t0 = Now();
  for (int w = 0; w < writers; ++w)
    for (int i = 0; i < entries; ++i) {
      std::string key = Key(w, i);
      sqlite3_reset(get);
      sqlite3_bind_blob(get, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
      found_shared += sqlite3_step(get) == SQLITE_ROW;
    }
  double look_shared = Now() - t0;
  sqlite3_finalize(get);
  sqlite3_close(db);
  (void)env->RemoveAll(dir);

  std::printf(
      "{\"writers\": %d, \"entries_per_writer\": %d,\n"
      " \"per_writer_files\": {\"write_seconds\": %.3f, \"inserts_per_sec\": %.0f, \"reader_open_seconds\": %.4f, "
      "\"lookups_per_sec\": %.0f, \"found\": %lld},\n"
      " \"shared_wal_db\":    {\"write_seconds\": %.3f, \"inserts_per_sec\": %.0f, \"reader_open_seconds\": %.4f, "
      "\"lookups_per_sec\": %.0f, \"found\": %lld},\n"
      " \"write_speedup\": %.2f}\n",
      writers, entries, w_ours, total / w_ours, open_ours, total / look_ours, static_cast<long long>(found_ours),
      w_shared, total / w_shared, open_shared, total / look_shared, static_cast<long long>(found_shared),
      w_shared / w_ours);
  return found_ours == static_cast<int64_t>(total) && found_shared == static_cast<int64_t>(total) ? 0 : 1;
}
