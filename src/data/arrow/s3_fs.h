// Internal to the Arrow module (data/arrow/): Arrow's S3 file system behind s3:// paths. Credentials come from the
// AWS SDK's default chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN, AWS_PROFILE and the
// ~/.aws files, web identity, instance metadata) and are never logged; AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL
// points at an S3-compatible store (MinIO, Ceph, R2, moto); AWS_REGION or AWS_DEFAULT_REGION picks the region.
//
// Thread-safety: all functions may be called from several threads; the file system is created once per process.
#pragma once

#include <arrow/filesystem/s3fs.h>
#include <arrow/io/interfaces.h>

#include <memory>
#include <string>

#include "util/env.h"
#include "util/status.h"

namespace mmirage::arrow_module {

// The process's S3 file system (initialises the AWS SDK on first use). Errors: the SDK or the options.
Result<std::shared_ptr<arrow::fs::S3FileSystem>> S3FileSystem();

// "s3://bucket/key" → "bucket/key" (the file system's path; a trailing '/' dropped). Errors: no bucket.
Result<std::string> S3Key(const std::string& path);

// A random-access reader of `path` (local or s3://) for the Parquet and Arrow readers.
Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenInputFile(const std::string& path);

// The Env serving s3:// paths (util/env_schemes.h); lives until process exit.
Result<Env*> S3Env();

}  // namespace mmirage::arrow_module
