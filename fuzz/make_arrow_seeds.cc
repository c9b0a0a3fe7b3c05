// Writes the seed corpus of fuzz_arrow with our own writer (data/hf_writer.h): a few tiny datasets covering the
// column types the writer makes (bool, int64, float64, string, binary, list, struct, HF Image, null), each as an
// Arrow IPC stream (seed byte 0 = 0) and as Parquet (byte 0 = 1). Usage: make_arrow_seeds <out-dir>
#include <cstdio>
#include <string>
#include <vector>

#include "data/hf_writer.h"
#include "data/json.h"
#include "data/tagged_json.h"
#include "util/env.h"

namespace {

class Rows : public mmirage::RowSource {
 public:
  explicit Rows(std::vector<mmirage::Value> rows) : rows_(std::move(rows)) {}
  mmirage::Status Open() override {
    at_ = 0;
    return mmirage::Status::OK();
  }
  mmirage::Result<bool> Next(mmirage::Value* row) override {
    if (at_ >= rows_.size()) return false;
    *row = rows_[at_++];
    return true;
  }

 private:
  std::vector<mmirage::Value> rows_;
  size_t at_ = 0;
};

// Rows as JSON lines (journal form: "\u0000b64:..." strings are bytes).
const std::vector<std::vector<const char*>> kDatasets = {
    {R"({"id": 1, "text": "hello", "score": 0.5, "ok": true})",
     R"({"id": 2, "text": "wörld", "score": null, "ok": false})",
     R"({"id": null, "text": "", "score": -1e300, "ok": null})"},
    {R"({"tags": ["a", "b"], "meta": {"lang": "en", "n": 3}, "pairs": [{"k": "x", "v": 1}]})",
     R"({"tags": [], "meta": {"lang": null, "n": 4, "extra": [1.5, 2]}, "pairs": []})",
     R"({"tags": null, "meta": null, "pairs": [{"k": "y", "v": null}, {"k": "z", "v": 7}]})"},
    {R"({"image": {"bytes": "\u0000b64:iVBORw0KGgo=", "path": "a.png"}, "raw": "\u0000b64:AAEC", "nothing": null})",
     R"({"image": {"bytes": null, "path": "b.png"}, "raw": "\u0000b64:", "nothing": null})"},
    {R"({"conversation": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
         "nested": [[1, 2], [3]], "big": 9007199254740993})"},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_arrow_seeds <out-dir>\n");
    return 2;
  }
  mmirage::Env* env = mmirage::Env::Default();
  const std::string out = argv[1];
  const std::string tmp = out + "/.tmp";
  int n = 0;
  for (const auto& lines : kDatasets) {
    std::vector<mmirage::Value> rows;
    for (const char* line : lines) {
      auto v = mmirage::ParseJson(line);
      if (!v.ok() || !mmirage::UntagBytes(&*v)) {
        std::fprintf(stderr, "make_arrow_seeds: bad seed row %s\n", line);
        return 1;
      }
      rows.push_back(*v);
    }
    for (auto format : {mmirage::OutputFormat::kHf, mmirage::OutputFormat::kParquet}) {
      (void)env->RemoveAll(tmp);
      if (auto st = env->CreateDirs(tmp); !st.ok()) {
        std::fprintf(stderr, "make_arrow_seeds: %s\n", st.message().c_str());
        return 1;
      }
      Rows source(rows);
      auto written = mmirage::WriteArrowOutput(env, &source, tmp, format);
      if (!written.ok()) {
        std::fprintf(stderr, "make_arrow_seeds: %s\n", written.status().message().c_str());
        return 1;
      }
      bool pq = format == mmirage::OutputFormat::kParquet;
      auto bytes = env->ReadFileToString(tmp + (pq ? "/data.parquet" : "/data-00000-of-00001.arrow"));
      if (!bytes.ok()) {
        std::fprintf(stderr, "make_arrow_seeds: %s\n", bytes.status().message().c_str());
        return 1;
      }
      std::string seed(1, pq ? '\x01' : '\x00');
      seed += *bytes;
      std::string name = out + "/seed-" + std::to_string(n) + (pq ? "-parquet" : "-arrow");
      if (auto st = mmirage::WriteFileAtomically(env, name, seed); !st.ok()) {
        std::fprintf(stderr, "make_arrow_seeds: %s\n", st.message().c_str());
        return 1;
      }
    }
    ++n;
  }
  (void)env->RemoveAll(tmp);
  return 0;
}
