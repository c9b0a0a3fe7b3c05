// Model references: `server_args.model_path` may name a file on the Hugging Face Hub instead of a local path,
//   hf://<owner>/<repo>[@<revision>]/<path/in/repo/file.gguf>     (revision defaults to "main")
// ResolveModelPath turns such a reference into a local file, downloading it into a cache on first use:
//   cache:  ${MMIRAGE_CACHE:-$HOME/.cache/mmirage}/hf/<owner>/<repo>/<revision>/<path>
//   URL:    ${HF_ENDPOINT:-https://huggingface.co}/<owner>/<repo>/resolve/<revision>/<path>
// with `Authorization: Bearer $HF_TOKEN` when HF_TOKEN is set (never logged). A cached file is used without any
// network access.
//
// Thread-safety: all functions may be called concurrently; downloads of the same file (threads or processes)
// are serialised by DownloadFile's lock, so only one of them fetches it. Nothing is retained after a call.
#pragma once

#include <string>
#include <string_view>

#include "config/config.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::process::llm {

struct HfModelRef {
  std::string owner;              // e.g. "Qwen"
  std::string repo;               // e.g. "Qwen2.5-0.5B-Instruct-GGUF"
  std::string revision = "main";  // branch, tag or commit
  std::string path;               // file inside the repository, e.g. "qwen2.5-0.5b-instruct-q4_k_m.gguf"
};

// True when model_path starts with "hf://" (whether or not the rest is well formed).
bool IsHfModelRef(std::string_view model_path);

// Parses an hf:// reference. No I/O. Errors: kInvalidArgument ("invalid model reference '<ref>': ...") when the
// prefix is not hf://, the owner, repo or path is missing or empty, owner/repo/revision contain characters other
// than letters, digits, '-', '_' and '.', or a path segment is empty, "." or "..".
Result<HfModelRef> ParseHfModelRef(const std::string& model_path);

// Returns the local file for model_path: a plain path (anything not starting with "hf://") unchanged, without
// checking that it exists; an hf:// reference as its absolute cache path, downloaded first (with a progress
// bar on stderr, see util/http/download.h) when not cached. vars supplies HF_ENDPOINT, HF_TOKEN, MMIRAGE_CACHE and
// HOME (an empty value counts as unset).
// Errors:
//   kInvalidArgument  malformed reference (as ParseHfModelRef); neither MMIRAGE_CACHE nor HOME set
//   other codes       from DownloadFile, with the message
//                     "cannot download <model_path> (<url>): <reason>", e.g. "...: HTTP 404" (kNotFound);
//                     retryable failures (kUnavailable: network unreachable, HTTP 429/5xx) add how to download
//                     the file by hand and point model_path at it; kIOError for cache directory errors
// On failure no file is left at the cache path.
Result<std::string> ResolveModelPath(Env* env, const std::string& model_path, const config::VarLookup& vars);

}  // namespace mmirage::process::llm
