// Arrow's S3 file system for s3:// paths (data/arrow/s3_fs.h).
#include "data/arrow/s3_fs.h"

#include <arrow/buffer.h>
#include <arrow/io/file.h>
#include <arrow/io/memory.h>

#include <cstdlib>
#include <mutex>

#include "data/arrow/arrow_util.h"
#include "util/env_schemes.h"

namespace mmirage::arrow_module {
namespace {

std::string EnvVar(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

// Options from the standard AWS variables; the credentials stay with the SDK's default chain.
Result<arrow::fs::S3Options> OptionsFromEnvironment() {
  arrow::fs::S3Options o = arrow::fs::S3Options::Defaults();
  std::string endpoint = EnvVar("AWS_ENDPOINT_URL_S3");
  if (endpoint.empty()) endpoint = EnvVar("AWS_ENDPOINT_URL");
  if (!endpoint.empty()) {
    size_t sep = endpoint.find("://");
    if (sep != std::string::npos) {
      o.scheme = endpoint.substr(0, sep);
      endpoint = endpoint.substr(sep + 3);
    }
    if (o.scheme != "http" && o.scheme != "https") {
      return Status::InvalidArgument("AWS_ENDPOINT_URL: scheme must be http or https, got '" + o.scheme + "'");
    }
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    o.endpoint_override = endpoint;
  }
  std::string region = EnvVar("AWS_REGION");
  if (region.empty()) region = EnvVar("AWS_DEFAULT_REGION");
  if (!region.empty()) o.region = region;
  if (o.region.empty()) o.region = "us-east-1";
  o.allow_bucket_creation = false;  // a bucket is the user's to create, with the policies they choose
  o.allow_bucket_deletion = false;
  o.allow_delayed_open = true;  // small objects in one PUT (errors surface at Close, which every caller checks)
  return o;
}

Result<std::shared_ptr<arrow::fs::S3FileSystem>> MakeFileSystem() {
  arrow::fs::S3GlobalOptions global = arrow::fs::S3GlobalOptions::Defaults();
  global.log_level = arrow::fs::S3LogLevel::Fatal;  // the SDK's own log would go to stdout
  arrow::Status st = arrow::fs::InitializeS3(global);
  if (!st.ok()) return Status::Unavailable("cannot initialise S3 support: " + ArrowMessage(st));
  MMIRAGE_ASSIGN_OR_RETURN(arrow::fs::S3Options options, OptionsFromEnvironment());
  auto fs = arrow::fs::S3FileSystem::Make(options);
  if (!fs.ok()) return Status::Unavailable("cannot open S3: " + ArrowMessage(fs.status()));
  // The SDK must shut down before the process's static objects are destroyed (Arrow warns, and may crash, if
  // not). Registered after the first client exists: exit handlers run in reverse order, so this one runs before
  // the destructors of the static objects Arrow creates with its first client.
  std::atexit([] { (void)arrow::fs::EnsureS3Finalized(); });
  return *fs;
}

}  // namespace

Result<std::shared_ptr<arrow::fs::S3FileSystem>> S3FileSystem() {
  static std::once_flag once;
  static Result<std::shared_ptr<arrow::fs::S3FileSystem>>* fs = nullptr;  // never destroyed (see FinalizeS3)
  std::call_once(once, [] { fs = new Result<std::shared_ptr<arrow::fs::S3FileSystem>>(MakeFileSystem()); });
  return *fs;
}

Result<std::string> S3Key(const std::string& path) {
  if (path.rfind("s3://", 0) != 0) return Status::InvalidArgument(path + ": not an s3:// path");
  std::string key = path.substr(5);
  while (!key.empty() && key.back() == '/') key.pop_back();
  if (key.empty() || key.front() == '/') return Status::InvalidArgument(path + ": no bucket in the s3:// path");
  return key;
}

Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenInputFile(const std::string& path) {
  if (PathScheme(path) != "s3") {
    auto in = arrow::io::ReadableFile::Open(path);
    if (!in.ok()) return Status::IOError(path + ": " + ArrowMessage(in.status()));
    return std::shared_ptr<arrow::io::RandomAccessFile>(*in);
  }
  MMIRAGE_ASSIGN_OR_RETURN(auto fs, S3FileSystem());
  MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(path));
  auto in = fs->OpenInputFile(key);
  if (in.ok()) return *in;
  // A file still stored as parts (data/arrow/s3_objects.h) is read whole into memory.
  MMIRAGE_ASSIGN_OR_RETURN(Env * env, S3Env());
  if (Result<std::string> text = env->ReadFileToString(path); text.ok()) {
    return std::shared_ptr<arrow::io::RandomAccessFile>(
        std::make_shared<arrow::io::BufferReader>(arrow::Buffer::FromString(std::move(*text))));
  }
  return Status::IOError(path + ": " + ArrowMessage(in.status()));
}

}  // namespace mmirage::arrow_module
