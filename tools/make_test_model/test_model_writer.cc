// WriteTestModel: qwen2 hparams + copied tokenizer + random tensors, streamed to `<out>.tmp` and renamed.
#include <ggml.h>
#include <gguf.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "test_model.h"

namespace mmirage::tools {
namespace {

constexpr float kWeightStd = 0.02f;  // like HF initializer_range; RMS norms keep activations O(1) anyway
constexpr float kRopeFreqBase = 1000000.0f;
constexpr float kRmsNormEps = 1e-6f;
// Logit bias for control tokens (EOS, <|im_end|>, <|im_start|>, ...). Random logits have a spread of ~0.2 for
// tiny, so greedy decoding practically never ends at once, while sampling can still reach EOS occasionally.
constexpr float kControlTokenBias = -1.0f;
constexpr int32_t kTokenTypeControl = 3;  // llama_token_type LLAMA_TOKEN_TYPE_CONTROL
constexpr size_t kChunkElements = size_t{1} << 20;

const TestModelPreset kPresets[] = {
    // name, layers, n_embd, heads, kv heads, ff, context, f16, tied
    {"tiny", 2, 64, 4, 2, 128, 4096, false, false},        // untied: tied random weights just echo the input
    {"small", 24, 896, 14, 2, 4864, 32768, true, true},    // Qwen2.5-0.5B shape
    {"medium", 36, 2560, 32, 8, 9728, 32768, true, true},  // Qwen3-4B-like shape, for GPU throughput
};

struct GgufDeleter {
  void operator()(gguf_context* ctx) const { gguf_free(ctx); }
};
struct GgmlDeleter {
  void operator()(ggml_context* ctx) const { ggml_free(ctx); }
};
using GgufPtr = std::unique_ptr<gguf_context, GgufDeleter>;
using GgmlPtr = std::unique_ptr<ggml_context, GgmlDeleter>;

// Keeps ggml's last error line (instead of printing it) while alive, so failures become one Status line.
class GgmlLogCapture {
 public:
  GgmlLogCapture() { ggml_log_set(&GgmlLogCapture::Callback, this); }
  ~GgmlLogCapture() { ggml_log_set(nullptr, nullptr); }
  GgmlLogCapture(const GgmlLogCapture&) = delete;
  GgmlLogCapture& operator=(const GgmlLogCapture&) = delete;
  std::string last_error() const {
    std::string s = last_error_;
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s.empty() ? "unknown error" : s;
  }

 private:
  static void Callback(ggml_log_level level, const char* text, void* user_data) {
    auto* self = static_cast<GgmlLogCapture*>(user_data);
    if (level == GGML_LOG_LEVEL_ERROR) self->last_error_ = text;
  }
  std::string last_error_;
};

enum class TensorInit { kRandom, kOnes, kOutputBias };

struct TensorPlan {
  std::string name;
  ggml_type type = GGML_TYPE_F32;
  int64_t ne0 = 0;
  int64_t ne1 = 1;  // 1 for vectors
  TensorInit init = TensorInit::kRandom;
};

// Tensor names and shapes as llama_model_qwen2::load_arch_tensors expects them (ne0 is the input dimension).
std::vector<TensorPlan> PlanTensors(const TestModelPreset& p, int64_t n_vocab) {
  const ggml_type wtype = p.f16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
  const int64_t n_embd = p.embedding_length;
  const int64_t n_embd_kv = n_embd / p.head_count * p.head_count_kv;
  const int64_t n_ff = p.feed_forward_length;
  std::vector<TensorPlan> plan;
  auto add = [&](std::string name, ggml_type type, int64_t ne0, int64_t ne1, TensorInit init) {
    plan.push_back({std::move(name), type, ne0, ne1, init});
  };
  add("token_embd.weight", wtype, n_embd, n_vocab, TensorInit::kRandom);
  add("output_norm.weight", GGML_TYPE_F32, n_embd, 1, TensorInit::kOnes);
  if (!p.tie_embeddings) add("output.weight", wtype, n_embd, n_vocab, TensorInit::kRandom);
  add("output.bias", GGML_TYPE_F32, n_vocab, 1, TensorInit::kOutputBias);
  for (uint32_t i = 0; i < p.block_count; ++i) {
    const std::string blk = "blk." + std::to_string(i) + ".";
    add(blk + "attn_norm.weight", GGML_TYPE_F32, n_embd, 1, TensorInit::kOnes);
    add(blk + "attn_q.weight", wtype, n_embd, n_embd, TensorInit::kRandom);
    add(blk + "attn_q.bias", GGML_TYPE_F32, n_embd, 1, TensorInit::kRandom);
    add(blk + "attn_k.weight", wtype, n_embd, n_embd_kv, TensorInit::kRandom);
    add(blk + "attn_k.bias", GGML_TYPE_F32, n_embd_kv, 1, TensorInit::kRandom);
    add(blk + "attn_v.weight", wtype, n_embd, n_embd_kv, TensorInit::kRandom);
    add(blk + "attn_v.bias", GGML_TYPE_F32, n_embd_kv, 1, TensorInit::kRandom);
    add(blk + "attn_output.weight", wtype, n_embd, n_embd, TensorInit::kRandom);
    add(blk + "ffn_norm.weight", GGML_TYPE_F32, n_embd, 1, TensorInit::kOnes);
    add(blk + "ffn_gate.weight", wtype, n_embd, n_ff, TensorInit::kRandom);
    add(blk + "ffn_down.weight", wtype, n_ff, n_embd, TensorInit::kRandom);
    add(blk + "ffn_up.weight", wtype, n_embd, n_ff, TensorInit::kRandom);
  }
  return plan;
}

// splitmix64: tiny, fast, and fully specified, so files are identical across compilers and platforms.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

// One independent stream per tensor: the weights of a tensor do not depend on which tensors precede it.
uint64_t TensorSeed(uint64_t seed, std::string_view name) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ull;
  return SplitMix64(seed ^ h).Next();
}

// Uniform on [-a, a] with standard deviation kWeightStd: cheaper than Gaussian and just as good for a smoke model.
void FillRandom(SplitMix64& rng, float* out, size_t n) {
  const float a = kWeightStd * std::sqrt(3.0f);
  size_t i = 0;
  for (; i + 1 < n; i += 2) {
    const uint64_t r = rng.Next();
    out[i] = (static_cast<float>(r >> 40) * 0x1p-23f - 1.0f) * a;
    out[i + 1] = (static_cast<float>((r >> 8) & 0xFFFFFF) * 0x1p-23f - 1.0f) * a;
  }
  if (i < n) out[i] = (static_cast<float>(rng.Next() >> 40) * 0x1p-23f - 1.0f) * a;
}

Result<GgufPtr> LoadVocab(Env* env, const std::string& path, GgmlLogCapture& log) {
  auto bytes = env->ReadFileToString(path);
  if (!bytes.ok()) return bytes.status().WithContext("vocab");
  gguf_init_params params = {/*no_alloc=*/true, /*ctx=*/nullptr};
  GgufPtr vocab(gguf_init_from_buffer(bytes->data(), bytes->size(), params));
  if (!vocab) return Status::Corruption("vocab: " + path + ": not a GGUF file (" + log.last_error() + ")");
  return vocab;
}

// Copies every `tokenizer.*` key; returns the number of tokens.
Result<uint32_t> CopyTokenizer(const gguf_context* src, gguf_context* dst, const std::string& vocab_path) {
  const int64_t tokens_id = gguf_find_key(src, "tokenizer.ggml.tokens");
  if (tokens_id < 0 || gguf_get_kv_type(src, tokens_id) != GGUF_TYPE_ARRAY ||
      gguf_get_arr_type(src, tokens_id) != GGUF_TYPE_STRING || gguf_get_arr_n(src, tokens_id) == 0) {
    return Status::InvalidArgument("vocab: " + vocab_path + ": no tokenizer.ggml.tokens string array");
  }
  for (int64_t i = 0; i < gguf_get_n_kv(src); ++i) {
    const char* key = gguf_get_key(src, i);
    if (std::strncmp(key, "tokenizer.", 10) != 0) continue;
    const gguf_type type = gguf_get_kv_type(src, i);
    if (type == GGUF_TYPE_STRING) {
      gguf_set_val_str(dst, key, gguf_get_val_str(src, i));
    } else if (type != GGUF_TYPE_ARRAY) {
      // Scalars: same bytes, same type (the typed setters only differ in the value's width).
      const void* data = gguf_get_val_data(src, i);
      switch (type) {
        case GGUF_TYPE_UINT8: gguf_set_val_u8(dst, key, *static_cast<const uint8_t*>(data)); break;
        case GGUF_TYPE_INT8: gguf_set_val_i8(dst, key, *static_cast<const int8_t*>(data)); break;
        case GGUF_TYPE_UINT16: gguf_set_val_u16(dst, key, *static_cast<const uint16_t*>(data)); break;
        case GGUF_TYPE_INT16: gguf_set_val_i16(dst, key, *static_cast<const int16_t*>(data)); break;
        case GGUF_TYPE_UINT32: gguf_set_val_u32(dst, key, *static_cast<const uint32_t*>(data)); break;
        case GGUF_TYPE_INT32: gguf_set_val_i32(dst, key, *static_cast<const int32_t*>(data)); break;
        case GGUF_TYPE_FLOAT32: gguf_set_val_f32(dst, key, *static_cast<const float*>(data)); break;
        case GGUF_TYPE_UINT64: gguf_set_val_u64(dst, key, *static_cast<const uint64_t*>(data)); break;
        case GGUF_TYPE_INT64: gguf_set_val_i64(dst, key, *static_cast<const int64_t*>(data)); break;
        case GGUF_TYPE_FLOAT64: gguf_set_val_f64(dst, key, *static_cast<const double*>(data)); break;
        case GGUF_TYPE_BOOL: gguf_set_val_bool(dst, key, gguf_get_val_bool(src, i)); break;
        default:
          return Status::InvalidArgument("vocab: " + vocab_path + ": key " + key + " has unsupported type " +
                                         gguf_type_name(type));
      }
    } else {
      const gguf_type arr_type = gguf_get_arr_type(src, i);
      const size_t n = gguf_get_arr_n(src, i);
      if (arr_type == GGUF_TYPE_STRING) {
        std::vector<const char*> strs(n);
        for (size_t j = 0; j < n; ++j) strs[j] = gguf_get_arr_str(src, i, j);
        gguf_set_arr_str(dst, key, strs.data(), n);
      } else if (arr_type == GGUF_TYPE_ARRAY) {
        return Status::InvalidArgument("vocab: " + vocab_path + ": key " + key + " is a nested array");
      } else {
        gguf_set_arr_data(dst, key, arr_type, gguf_get_arr_data(src, i), n);
      }
    }
  }
  return static_cast<uint32_t>(gguf_get_arr_n(src, tokens_id));
}

// 0 for ordinary tokens, kControlTokenBias for control tokens, eos_bias for the EOS/EOT ids and <|im_end|>.
std::vector<float> OutputBias(const gguf_context* vocab, uint32_t n_vocab, float eos_bias) {
  std::vector<float> bias(n_vocab, 0.0f);
  const int64_t types_id = gguf_find_key(vocab, "tokenizer.ggml.token_type");
  if (types_id >= 0 && gguf_get_kv_type(vocab, types_id) == GGUF_TYPE_ARRAY &&
      gguf_get_arr_type(vocab, types_id) == GGUF_TYPE_INT32) {
    const auto* types = static_cast<const int32_t*>(gguf_get_arr_data(vocab, types_id));
    const size_t n = std::min<size_t>(gguf_get_arr_n(vocab, types_id), n_vocab);
    for (size_t i = 0; i < n; ++i) {
      if (types[i] == kTokenTypeControl) bias[i] = kControlTokenBias;
    }
  }
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"}) {
    const int64_t id = gguf_find_key(vocab, key);
    if (id >= 0 && gguf_get_kv_type(vocab, id) == GGUF_TYPE_UINT32) {
      const uint32_t tok = gguf_get_val_u32(vocab, id);
      if (tok < n_vocab) bias[tok] = eos_bias;
    }
  }
  const int64_t tokens_id = gguf_find_key(vocab, "tokenizer.ggml.tokens");
  if (tokens_id >= 0) {
    const size_t n = std::min<size_t>(gguf_get_arr_n(vocab, tokens_id), n_vocab);
    for (size_t i = 0; i < n; ++i) {
      const char* text = gguf_get_arr_str(vocab, tokens_id, i);
      if (text != nullptr && std::string_view(text) == "<|im_end|>") bias[i] = eos_bias;
    }
  }
  return bias;
}

void SetHparams(gguf_context* ctx, const TestModelPreset& p, uint64_t seed) {
  gguf_set_val_str(ctx, "general.architecture", "qwen2");
  gguf_set_val_str(ctx, "general.name", ("mmirage-test-" + p.name).c_str());
  gguf_set_val_u32(ctx, "general.file_type", p.f16 ? 1 : 0);  // LLAMA_FTYPE_MOSTLY_F16 : LLAMA_FTYPE_ALL_F32
  gguf_set_val_str(ctx, "mmirage.test_model.preset", p.name.c_str());
  gguf_set_val_u64(ctx, "mmirage.test_model.seed", seed);
  gguf_set_val_u32(ctx, "qwen2.context_length", p.context_length);
  gguf_set_val_u32(ctx, "qwen2.embedding_length", p.embedding_length);
  gguf_set_val_u32(ctx, "qwen2.block_count", p.block_count);
  gguf_set_val_u32(ctx, "qwen2.feed_forward_length", p.feed_forward_length);
  gguf_set_val_u32(ctx, "qwen2.attention.head_count", p.head_count);
  gguf_set_val_u32(ctx, "qwen2.attention.head_count_kv", p.head_count_kv);
  gguf_set_val_f32(ctx, "qwen2.rope.freq_base", kRopeFreqBase);
  gguf_set_val_f32(ctx, "qwen2.attention.layer_norm_rms_epsilon", kRmsNormEps);
}

// Streams one tensor's bytes, then zero padding up to the GGUF alignment (as gguf_write_to_file does).
Status WriteTensor(WritableFile* file, const TensorPlan& t, uint64_t seed, const std::vector<float>& output_bias,
                   size_t alignment, uint64_t* bytes_written) {
  const size_t n = static_cast<size_t>(t.ne0 * t.ne1);
  SplitMix64 rng(TensorSeed(seed, t.name));
  std::vector<float> f32(std::min(n, kChunkElements));
  std::vector<ggml_fp16_t> f16(t.type == GGML_TYPE_F16 ? f32.size() : 0);
  for (size_t done = 0; done < n;) {
    const size_t m = std::min(n - done, kChunkElements);
    switch (t.init) {
      case TensorInit::kRandom: FillRandom(rng, f32.data(), m); break;
      case TensorInit::kOnes: std::fill_n(f32.data(), m, 1.0f); break;
      case TensorInit::kOutputBias: std::copy_n(output_bias.data() + done, m, f32.data()); break;
    }
    std::string_view bytes;
    if (t.type == GGML_TYPE_F16) {
      ggml_fp32_to_fp16_row(f32.data(), f16.data(), static_cast<int64_t>(m));
      bytes = {reinterpret_cast<const char*>(f16.data()), m * sizeof(ggml_fp16_t)};
    } else {
      bytes = {reinterpret_cast<const char*>(f32.data()), m * sizeof(float)};
    }
    MMIRAGE_TRY(file->Append(bytes));
    *bytes_written += bytes.size();
    done += m;
  }
  const size_t pad = (alignment - *bytes_written % alignment) % alignment;
  if (pad > 0) {
    MMIRAGE_TRY(file->Append(std::string(pad, '\0')));
    *bytes_written += pad;
  }
  return Status::OK();
}

// Everything after the inputs are read: header, tensor data, sync. Writes only to `tmp_path`.
Result<TestModelStats> WriteFile(Env* env, const std::string& tmp_path, gguf_context* ctx,
                                 const std::vector<TensorPlan>& plan, uint64_t seed,
                                 const std::vector<float>& output_bias) {
  TestModelStats stats;
  std::vector<char> meta(gguf_get_meta_size(ctx));
  gguf_get_meta_data(ctx, meta.data());
  MMIRAGE_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env->NewWritableFile(tmp_path));
  Status s = file->Append(std::string_view(meta.data(), meta.size()));
  stats.bytes_written = meta.size();
  const size_t alignment = gguf_get_alignment(ctx);
  for (size_t i = 0; s.ok() && i < plan.size(); ++i) {
    s = WriteTensor(file.get(), plan[i], seed, output_bias, alignment, &stats.bytes_written);
    stats.n_params += static_cast<uint64_t>(plan[i].ne0 * plan[i].ne1);
  }
  if (s.ok()) s = file->Sync();
  Status c = file->Close();
  if (s.ok()) s = c;
  if (!s.ok()) return s;
  return stats;
}

}  // namespace

Result<TestModelPreset> FindTestModelPreset(const std::string& name) {
  for (const auto& p : kPresets) {
    if (p.name == name) return p;
  }
  return Status::InvalidArgument("unknown preset '" + name + "' (expected tiny, small or medium)");
}

Result<TestModelStats> WriteTestModel(Env* env, const TestModelOptions& options) {
  MMIRAGE_ASSIGN_OR_RETURN(TestModelPreset preset, FindTestModelPreset(options.preset));
  GgmlLogCapture log;
  // Inputs first: a missing vocab or template must not leave even a temp file behind.
  MMIRAGE_ASSIGN_OR_RETURN(GgufPtr vocab, LoadVocab(env, options.vocab_path, log));
  auto chat_template = env->ReadFileToString(options.chat_template_path);
  if (!chat_template.ok()) return chat_template.status().WithContext("chat template");

  GgufPtr ctx(gguf_init_empty());
  SetHparams(ctx.get(), preset, options.seed);
  MMIRAGE_ASSIGN_OR_RETURN(uint32_t n_vocab, CopyTokenizer(vocab.get(), ctx.get(), options.vocab_path));
  gguf_set_val_str(ctx.get(), "tokenizer.chat_template", chat_template->c_str());

  // gguf_add_tensor takes shapes from ggml tensors; a no_alloc context holds just their descriptors.
  const std::vector<TensorPlan> plan = PlanTensors(preset, n_vocab);
  ggml_init_params gparams = {/*mem_size=*/ggml_tensor_overhead() * plan.size(), /*mem_buffer=*/nullptr,
                              /*no_alloc=*/true};
  GgmlPtr meta_ctx(ggml_init(gparams));
  if (!meta_ctx) return Status::Internal("ggml_init failed: " + log.last_error());
  for (const auto& t : plan) {
    ggml_tensor* tensor = t.ne1 == 1 ? ggml_new_tensor_1d(meta_ctx.get(), t.type, t.ne0)
                                     : ggml_new_tensor_2d(meta_ctx.get(), t.type, t.ne0, t.ne1);
    ggml_set_name(tensor, t.name.c_str());
    gguf_add_tensor(ctx.get(), tensor);
  }

  const std::string tmp_path = options.out_path + ".tmp";
  auto stats =
      WriteFile(env, tmp_path, ctx.get(), plan, options.seed, OutputBias(vocab.get(), n_vocab, options.eos_bias));
  Status s = stats.status();
  if (s.ok()) s = env->RenameFile(tmp_path, options.out_path);
  if (s.ok()) s = env->SyncDir(Dirname(options.out_path));
  if (!s.ok()) {
    if (env->FileExists(tmp_path)) (void)env->RemoveFile(tmp_path);
    return s.WithContext("output");
  }
  stats->n_vocab = n_vocab;
  return stats;
}

}  // namespace mmirage::tools
