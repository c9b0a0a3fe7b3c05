// The JSON parser and the JSONL reader. Input byte 0 picks the file form (plain, .gz, .zst); the rest is written
// to a scratch file and read line by line with LineReader (decompressing), each line parsed as a row.
#include <cstdint>
#include <cstdio>
#include <string>

#include "data/json.h"
#include "data/line_reader.h"
#include "fuzz_util.h"
#include "util/env.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view all(reinterpret_cast<const char*>(data), size);
  auto whole = mmirage::ParseJson(all);
  if (whole.ok()) (void)mmirage::ToJsonPretty(*whole, 2, true);
  if (size == 0) return 0;
  static const char* kExt[] = {".jsonl", ".jsonl.gz", ".jsonl.zst"};
  std::string path = mmirage::fuzz::ScratchDir() + "/rows" + kExt[data[0] % 3];
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data + 1, 1, size - 1, f);
  std::fclose(f);
  auto reader = mmirage::LineReader::Open(mmirage::Env::Default(), path);
  if (!reader.ok()) return 0;
  std::string_view line;
  for (int i = 0; i < 100000; ++i) {
    auto more = (*reader)->Next(&line);
    if (!more.ok() || !*more) break;
    auto row = mmirage::ParseJson(line);
    if (row.ok()) (void)mmirage::ToJson(*row);
  }
  return 0;
}
