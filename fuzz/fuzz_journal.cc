// Journal recovery: a shard work directory with a fuzzed journal.json (and data/errors/usage files of fuzzed
// sizes) is opened by ShardWriter, which must resume or restart — never crash, never extend files with NULs.
// Input: journal text, NUL, then up to three bytes giving the data/errors/usage file sizes (x 7 bytes).
#include <cstdint>
#include <cstdio>
#include <string>

#include "fuzz_util.h"
#include "pipeline/shard_writer.h"
#include "util/env.h"

namespace {
void WriteFile(const std::string& path, std::string_view text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return;
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [journal, sizes] = mmirage::fuzz::SplitAtNul(data, size);
  const std::string out = mmirage::fuzz::ScratchDir() + "/out";
  std::string cmd = "rm -rf '" + out + "' && mkdir -p '" + out + "/shard_3.tmp.partial'";
  if (std::system(cmd.c_str()) != 0) return 0;
  const std::string work = out + "/shard_3.tmp.partial";
  auto size_of = [&](size_t i) {
    return i < sizes.size() ? static_cast<size_t>(static_cast<uint8_t>(sizes[i])) * 7 : 0;
  };
  WriteFile(work + "/data.jsonl", std::string(size_of(0), 'd'));
  WriteFile(work + "/errors.jsonl", std::string(size_of(1), 'e'));
  WriteFile(work + "/usage.jsonl", std::string(size_of(2), 'u'));
  WriteFile(work + "/journal.json", journal);
  mmirage::pipeline::ShardWriterOptions opts;
  opts.output_dir = out;
  opts.shard_id = 3;
  opts.splits = {""};
  opts.fingerprint = 42;
  auto w = mmirage::pipeline::ShardWriter::Open(mmirage::Env::Default(), opts);
  if (w.ok()) {
    (void)(*w)->resume_rows(0);
    (void)(*w)->AddSerialized(0, "{\"a\":1}\n", 1);
    (*w)->Advance(0, 1);
    (void)(*w)->Commit();
    (*w)->Abandon();
    // Resuming only ever truncates: a journal pointing past the end of a file must not extend it with NULs.
    auto text = mmirage::Env::Default()->ReadFileToString(work + "/data.jsonl");
    if (text.ok() && text->find('\0') != std::string::npos) __builtin_trap();
  }
  return 0;
}
