#include "util/env.h"

#include <atomic>
#include <cstdio>
#include <random>

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

Status WriteFileAtomically(Env* env, const std::string& path, std::string_view contents, bool durable) {
  const std::string tmp = path + ".tmp." + ProcessNonce() + "." + std::to_string(++temp_counter);
  Status s;
  {
    auto file = env->NewWritableFile(tmp);
    if (!file.ok()) return file.status();
    s = (*file)->Append(contents);
    if (s.ok()) s = durable ? (*file)->Sync() : (*file)->Flush();
    Status c = (*file)->Close();
    if (s.ok()) s = c;
  }
  if (s.ok()) s = env->RenameFile(tmp, path);
  if (s.ok() && durable) s = env->SyncDir(Dirname(path));
  if (!s.ok()) (void)env->RemoveFile(tmp);
  return s;
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
