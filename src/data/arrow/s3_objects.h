// Internal to the Arrow module (data/arrow/): how one file of an s3:// path is laid out in objects. A file `key` is
// either one object `key` (whole) or, while a writer commits to it, a run of part objects
// `key.mmirage-parts/00000000`, `.../00000001`, ... whose concatenation is the file (each commit uploads only the
// bytes appended since the last). A whole object wins: parts next to one are leftovers of an interrupted close (or
// rewrite) and are ignored. Parts are numbered from 0 without gaps: they are uploaded in order and deleted highest
// first, so a process killed at any moment leaves a readable file that holds at least what its last completed Sync
// uploaded.
//
// Thread-safety: the functions hold no state of their own; Arrow's file system is thread-safe.
// Errors: kNotFound for a file that is neither whole nor parts; IOError (naming `path`) for the store's errors.
#pragma once

#include <arrow/filesystem/filesystem.h>

#include <memory>
#include <string>
#include <vector>

#include "util/env.h"
#include "util/status.h"

namespace mmirage::arrow_module {

// The suffix of a file's directory of parts; GetChildren and Glob show `<name>` in its place.
inline constexpr const char* kPartsSuffix = ".mmirage-parts";

Status FromArrow(const arrow::Status& st, const std::string& path);

// Where a file's bytes are: `whole` (one object) or `parts` in order (empty when neither exists).
struct ObjectLayout {
  arrow::fs::FileType type = arrow::fs::FileType::NotFound;  // File for whole or parts, or Directory
  std::vector<arrow::fs::FileInfo> parts;                    // in order; empty for a whole object
  arrow::fs::FileInfo whole;                                 // the object when type is File and parts is empty
  int64_t size = 0;
  int64_t mtime_us = 0;
};

// "<key>.mmirage-parts/<n, 8 digits>".
std::string PartKey(const std::string& key, uint64_t n);

// The parts of `key` in order (none when there are none). `path` names the file in errors.
Result<std::vector<arrow::fs::FileInfo>> ListParts(arrow::fs::FileSystem* fs, const std::string& key,
                                                   const std::string& path);

// How `key` is stored: one HEAD, and a listing of its parts when there is no whole object.
Result<ObjectLayout> Resolve(arrow::fs::FileSystem* fs, const std::string& key, const std::string& path);

// Deletes `parts` highest first (a kill midway leaves a shorter run that still starts at 0).
Status DeleteParts(arrow::fs::FileSystem* fs, const std::vector<arrow::fs::FileInfo>& parts, const std::string& path);
// Deletes every part of `key` at once (no order: for parts that a whole object supersedes, or a file being
// removed), leaving no empty folder marker behind.
Status DeleteAllParts(arrow::fs::FileSystem* fs, const std::string& key, const std::string& path);

// Front-to-back reads of a file (whole or parts) in ranged requests growing from 256 KiB to `chunk` bytes.
std::unique_ptr<SequentialFile> NewLayoutReader(std::shared_ptr<arrow::fs::FileSystem> fs, ObjectLayout layout,
                                                std::string path, size_t chunk);

// Uploads the first `size` bytes (all when size < 0) of the file read by `in` as the object `key`.
Status UploadFrom(arrow::fs::FileSystem* fs, SequentialFile* in, const std::string& key, const std::string& path,
                  int64_t size = -1);

}  // namespace mmirage::arrow_module
