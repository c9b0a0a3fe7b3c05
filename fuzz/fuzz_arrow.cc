// The Arrow/Parquet input reader (data/arrow_reader.h). Input byte 0 picks the form (even: Arrow IPC stream, the
// `.arrow` files of an HF save_to_disk directory; odd: Parquet); the rest is written to a scratch file, which goes
// through the reader's own path: CountArrowRows, then ArrowRowSource over every row (and, from byte 0's high bits,
// a sub-range that skips batches). Every row is serialized, so each decoded value is touched. Errors are fine;
// crashes, leaks, sanitizer reports and hangs are not.
#include <cstdint>
#include <cstdio>
#include <string>

#include "data/arrow_reader.h"
#include "data/dataset.h"
#include "data/json.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool parquet = (data[0] & 1) != 0;
  std::string path = mmirage::fuzz::ScratchDir() + (parquet ? "/part.parquet" : "/part.arrow");
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data + 1, 1, size - 1, f);
  std::fclose(f);

  mmirage::DatasetPart part;
  part.files = {path};
  part.format = parquet ? mmirage::DataFormat::kParquet : mmirage::DataFormat::kArrowStream;
  auto count = mmirage::CountArrowRows(part);
  uint64_t n = count.ok() ? *count : 0;
  // Past the count too: a reader must stop at the file's end whatever range it is given.
  uint64_t skip = static_cast<uint64_t>(data[0] >> 1) % 8;
  mmirage::RowRange range{skip, n + 4};
  mmirage::ArrowRowSource source(part, range);
  mmirage::Value row;
  size_t file_index;
  uint64_t row_in_file, index;
  for (uint64_t i = 0; i < 1000000; ++i) {
    auto more = source.Next(&row, &file_index, &row_in_file, &index);
    if (!more.ok() || !*more) break;
    (void)mmirage::ToJson(row);
  }
  return 0;
}
