// WriteTestMmproj (a tiny CLIP + LLaVA MLP projector through the gguf API) and WriteTestPng (zlib).
#include "test_vlm.h"

#include <ggml.h>
#include <gguf.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace mmirage::tools {
namespace {

constexpr int kVisionEmbd = 32;  // ViT width
constexpr int kVisionFf = 64;    // ViT MLP width (must differ from kVisionEmbd: see clip.cpp's ffn swap check)
constexpr int kVisionHeads = 2;
constexpr int kVisionLayers = 2;  // LLaVA takes the second-to-last layer, so one layer runs
constexpr int kImageSize = 32;
constexpr int kPatchSize = 8;
constexpr int kProjHidden = 64;  // mm.0 output width
constexpr float kStd = 0.02f;

// splitmix64, as in test_model_writer.cc (weights are a pure function of seed and tensor name).
uint64_t Mix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t NameSeed(uint64_t seed, std::string_view name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ull;
  uint64_t s = seed ^ h;
  return Mix(s);
}

struct GgufDeleter {
  void operator()(gguf_context* c) const { gguf_free(c); }
};
struct GgmlDeleter {
  void operator()(ggml_context* c) const { ggml_free(c); }
};

enum class Init { kRandom, kOnes, kZeros };

}  // namespace

Status WriteTestMmproj(Env* env, const TestMmprojOptions& o) {
  ggml_init_params params = {/*mem_size=*/size_t{16} << 20, /*mem_buffer=*/nullptr, /*no_alloc=*/false};
  std::unique_ptr<ggml_context, GgmlDeleter> ctx(ggml_init(params));
  if (!ctx) return Status::Internal("ggml_init failed");
  std::unique_ptr<gguf_context, GgufDeleter> g(gguf_init_empty());
  gguf_context* gc = g.get();
  gguf_set_val_str(gc, "general.architecture", "clip");
  gguf_set_val_str(gc, "general.name", "mmirage-test-mmproj");
  gguf_set_val_u32(gc, "general.file_type", 0);
  gguf_set_val_u64(gc, "mmirage.test_model.seed", o.seed);
  gguf_set_val_bool(gc, "clip.has_vision_encoder", true);
  gguf_set_val_str(gc, "clip.projector_type", "mlp");
  gguf_set_val_bool(gc, "clip.use_gelu", true);
  gguf_set_val_u32(gc, "clip.vision.embedding_length", kVisionEmbd);
  gguf_set_val_u32(gc, "clip.vision.feed_forward_length", kVisionFf);
  gguf_set_val_u32(gc, "clip.vision.block_count", kVisionLayers);
  gguf_set_val_u32(gc, "clip.vision.projection_dim", o.text_n_embd);
  gguf_set_val_u32(gc, "clip.vision.attention.head_count", kVisionHeads);
  gguf_set_val_f32(gc, "clip.vision.attention.layer_norm_epsilon", 1e-6f);
  gguf_set_val_u32(gc, "clip.vision.image_size", kImageSize);
  gguf_set_val_u32(gc, "clip.vision.patch_size", kPatchSize);
  const float mean[3] = {0.5f, 0.5f, 0.5f};
  const float stdv[3] = {0.5f, 0.5f, 0.5f};
  gguf_set_arr_data(gc, "clip.vision.image_mean", GGUF_TYPE_FLOAT32, mean, 3);
  gguf_set_arr_data(gc, "clip.vision.image_std", GGUF_TYPE_FLOAT32, stdv, 3);

  auto add = [&](const std::string& name, std::vector<int64_t> ne, Init init) {
    ggml_tensor* t = ggml_new_tensor(ctx.get(), GGML_TYPE_F32, static_cast<int>(ne.size()), ne.data());
    ggml_set_name(t, name.c_str());
    auto* data = static_cast<float*>(t->data);
    const int64_t n = ggml_nelements(t);
    uint64_t state = NameSeed(o.seed, name);
    const float a = kStd * std::sqrt(3.0f);
    for (int64_t i = 0; i < n; ++i) {
      switch (init) {
        case Init::kOnes: data[i] = 1.0f; break;
        case Init::kZeros: data[i] = 0.0f; break;
        case Init::kRandom: data[i] = (static_cast<float>(Mix(state) >> 40) * 0x1p-23f - 1.0f) * a; break;
      }
    }
    gguf_add_tensor(gc, t);
  };
  const int64_t n_patches = (kImageSize / kPatchSize) * (kImageSize / kPatchSize);
  add("v.patch_embd.weight", {kPatchSize, kPatchSize, 3, kVisionEmbd}, Init::kRandom);
  add("v.patch_embd.bias", {kVisionEmbd}, Init::kZeros);
  add("v.position_embd.weight", {kVisionEmbd, n_patches}, Init::kRandom);
  add("v.pre_ln.weight", {kVisionEmbd}, Init::kOnes);
  add("v.pre_ln.bias", {kVisionEmbd}, Init::kZeros);
  for (int il = 0; il < kVisionLayers; ++il) {
    const std::string b = "v.blk." + std::to_string(il) + ".";
    for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
      add(b + w + ".weight", {kVisionEmbd, kVisionEmbd}, Init::kRandom);
      add(b + w + ".bias", {kVisionEmbd}, Init::kZeros);
    }
    add(b + "ln1.weight", {kVisionEmbd}, Init::kOnes);
    add(b + "ln1.bias", {kVisionEmbd}, Init::kZeros);
    add(b + "ln2.weight", {kVisionEmbd}, Init::kOnes);
    add(b + "ln2.bias", {kVisionEmbd}, Init::kZeros);
    add(b + "ffn_up.weight", {kVisionEmbd, kVisionFf}, Init::kRandom);
    add(b + "ffn_up.bias", {kVisionFf}, Init::kZeros);
    add(b + "ffn_down.weight", {kVisionFf, kVisionEmbd}, Init::kRandom);
    add(b + "ffn_down.bias", {kVisionEmbd}, Init::kZeros);
  }
  // The projector's output must look like token embeddings of the text model: scale it up to their spread.
  add("mm.0.weight", {kVisionEmbd, kProjHidden}, Init::kRandom);
  add("mm.0.bias", {kProjHidden}, Init::kZeros);
  add("mm.2.weight", {kProjHidden, static_cast<int64_t>(o.text_n_embd)}, Init::kRandom);
  add("mm.2.bias", {static_cast<int64_t>(o.text_n_embd)}, Init::kZeros);

  const std::string tmp = o.out_path + ".tmp";
  if (!gguf_write_to_file(gc, tmp.c_str(), /*only_meta=*/false)) {
    if (env->FileExists(tmp)) (void)env->RemoveFile(tmp);
    return Status::IOError("cannot write " + tmp);
  }
  Status s = env->RenameFile(tmp, o.out_path);
  if (!s.ok()) (void)env->RemoveFile(tmp);
  return s;
}

namespace {

void PutU32(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>((v >> shift) & 0xFF));
}

void PutChunk(std::string* out, const char* type, const std::string& data) {
  PutU32(out, static_cast<uint32_t>(data.size()));
  std::string body(type, 4);
  body += data;
  out->append(body);
  PutU32(out,
         static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
}

}  // namespace

Status WriteTestPng(Env* env, const std::string& path, int width, int height, uint64_t seed) {
  if (width < 1 || height < 1 || width > 4096 || height > 4096)
    return Status::InvalidArgument("image size must be between 1 and 4096 pixels");
  std::string raw;
  raw.reserve(static_cast<size_t>(height) * (1 + 3 * static_cast<size_t>(width)));
  uint64_t state = seed * 0x2545F4914F6CDD1Dull + 1;
  const int base = static_cast<int>(Mix(state) & 0xFF);
  for (int y = 0; y < height; ++y) {
    raw.push_back('\0');  // filter: none
    for (int x = 0; x < width; ++x) {
      const uint64_t r = Mix(state);
      raw.push_back(static_cast<char>((base + x * 255 / width + (r & 0x1F)) & 0xFF));
      raw.push_back(static_cast<char>((y * 255 / height + ((r >> 8) & 0x1F)) & 0xFF));
      raw.push_back(static_cast<char>((base * 3 + ((r >> 16) & 0x3F)) & 0xFF));
    }
  }
  uLongf n = compressBound(static_cast<uLong>(raw.size()));
  std::string z(n, '\0');
  if (compress2(reinterpret_cast<Bytef*>(z.data()), &n, reinterpret_cast<const Bytef*>(raw.data()),
                static_cast<uLong>(raw.size()), 6) != Z_OK) {
    return Status::Internal("zlib compression failed");
  }
  z.resize(n);
  std::string png("\x89PNG\r\n\x1a\n", 8);
  std::string ihdr;
  PutU32(&ihdr, static_cast<uint32_t>(width));
  PutU32(&ihdr, static_cast<uint32_t>(height));
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit RGB, deflate, no filter set, no interlace
  PutChunk(&png, "IHDR", ihdr);
  PutChunk(&png, "IDAT", z);
  PutChunk(&png, "IEND", "");
  return WriteFileAtomically(env, path, png);
}

}  // namespace mmirage::tools
