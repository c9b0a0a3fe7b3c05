#include "util/env.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <random>
#include <vector>

#include "util/env_schemes.h"

namespace mmirage {

namespace {

// A per-process random tag, so that temps of processes on different hosts (same pid) differ too.
const std::string& ProcessNonce() {
  static const std::string nonce = [] {
    std::random_device rd;
    uint64_t x = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    char buf[20];
    std::snprintf(buf, sizeof buf, "%012llx", static_cast<unsigned long long>(x & 0xffffffffffffull));
    return std::string(buf);
  }();
  return nonce;
}

std::atomic<uint64_t> temp_counter{0};

}  // namespace

Status SequentialFile::Skip(uint64_t n) {
  char buf[1 << 14];
  while (n > 0) {
    MMIRAGE_ASSIGN_OR_RETURN(size_t got, Read(static_cast<size_t>(std::min<uint64_t>(n, sizeof buf)), buf));
    if (got == 0) break;
    n -= got;
  }
  return Status::OK();
}

Result<uint64_t> Env::GetFileModificationMicros(const std::string& path) {
  return Status::Unavailable(path + ": modification time not available");
}

namespace {

// Object storage (a path with a URL scheme): one upload replaces an object atomically and durably, so the file is
// written in place — one request instead of a temp's upload, copy and delete.
Status ReplaceObject(Env* env, const std::string& path, std::string_view contents) {
  MMIRAGE_ASSIGN_OR_RETURN(auto file, env->NewWritableFile(path));
  MMIRAGE_TRY(file->Append(contents));
  MMIRAGE_TRY(file->Sync());
  return file->Close();
}

Status ReplaceFile(Env* env, const std::string& path, std::string_view contents, bool sync_file, bool sync_dir) {
  if (!PathScheme(path).empty()) return ReplaceObject(env, path, contents);
  const std::string tmp = path + ".tmp." + ProcessNonce() + "." + std::to_string(++temp_counter);
  Status s;
  {
    auto file = env->NewWritableFile(tmp);
    if (!file.ok()) return file.status();
    s = (*file)->Append(contents);
    if (s.ok()) s = sync_file ? (*file)->Sync() : (*file)->Flush();
    Status c = (*file)->Close();
    if (s.ok()) s = c;
  }
  if (s.ok()) s = env->RenameFile(tmp, path);
  if (s.ok() && sync_dir) s = env->SyncDir(Dirname(path));
  if (!s.ok()) (void)env->RemoveFile(tmp);
  return s;
}

}  // namespace

Status WriteFileAtomically(Env* env, const std::string& path, std::string_view contents, bool durable) {
  return ReplaceFile(env, path, contents, durable, durable);
}

Status WriteFileAtomicallyUnsyncedDir(Env* env, const std::string& path, std::string_view contents) {
  return ReplaceFile(env, path, contents, /*sync_file=*/true, /*sync_dir=*/false);
}

namespace {

// `<name>.tmp.<12 hex>.<digits>`: a WriteFileAtomically temp.
bool IsAtomicWriteTemp(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot + 1 == name.size() || dot < 18) return false;
  for (size_t i = dot + 1; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  const size_t nonce = dot - 12;
  if (name.compare(nonce - 5, 5, ".tmp.") != 0 || nonce - 5 == 0) return false;
  for (size_t i = nonce; i < dot; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

}  // namespace

void RemoveStaleTempFiles(Env* env, const std::string& dir, uint64_t min_age_us) {
  auto children = env->GetChildren(dir);
  if (!children.ok()) return;
  const uint64_t now = env->NowMicros();
  for (const std::string& name : *children) {
    if (!IsAtomicWriteTemp(name)) continue;
    const std::string path = JoinPath(dir, name);
    auto mtime = env->GetFileModificationMicros(path);
    if (!mtime.ok() || *mtime + min_age_us > now || !env->IsRegularFile(path)) continue;
    (void)env->RemoveFile(path);
  }
}

Status CreateDirsDurably(Env* env, const std::string& path) {
  std::vector<std::string> missing;  // innermost first
  for (std::string p = path; !p.empty() && p != "/" && p != "." && !env->IsDirectory(p); p = Dirname(p)) {
    missing.push_back(p);
  }
  if (missing.empty()) return Status::OK();
  MMIRAGE_TRY(env->CreateDirs(path));
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) MMIRAGE_TRY(env->SyncDir(Dirname(*it)));
  return Status::OK();
}

std::string Dirname(const std::string& path) {
  size_t p = path.find_last_of('/');
  if (p == std::string::npos) return ".";
  if (p == 0) return "/";
  return path.substr(0, p);
}

std::string Basename(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t i = p.find_last_of('/');
  return i == std::string::npos ? p : p.substr(i + 1);
}

std::string JoinPath(const std::string& a, const std::string& b) {
  if (a.empty() || (!b.empty() && b[0] == '/')) return b;
  if (a.back() == '/') return a + b;
  return a + "/" + b;
}

}  // namespace mmirage
