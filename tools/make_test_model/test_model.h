// Synthetic qwen2 GGUF models with random weights, for engine tests and throughput runs without downloads.
//
// WriteTestModel builds the GGUF header with ggml's public gguf API (hparams, a tokenizer copied from a vocab-only
// GGUF, a chat template) and streams the tensor data through an Env, so even the ~4B preset never sits in memory.
// Weights come from a splitmix64 stream keyed by (seed, tensor name): the same options give byte-identical files.
// CheckTestModel loads a written file with llama.cpp and greedy-decodes a few tokens (the `--check` smoke test).
//
// Thread-safety: free functions without shared state, except that they install ggml/llama log callbacks while
// they run (llama.cpp's logger is process-global); call them from one thread at a time.
#pragma once

#include <cstdint>
#include <string>

#include "util/env.h"
#include "util/status.h"

namespace mmirage::tools {

// Shape of a generated model. Field names follow the qwen2 GGUF keys they become.
struct TestModelPreset {
  std::string name;
  uint32_t block_count = 0;          // transformer layers
  uint32_t embedding_length = 0;     // n_embd
  uint32_t head_count = 0;           // query heads; n_embd must divide evenly
  uint32_t head_count_kv = 0;        // key/value heads (GQA); head_count must divide evenly
  uint32_t feed_forward_length = 0;  // n_ff
  uint32_t context_length = 0;       // qwen2.context_length (training context), tokens
  bool f16 = false;                  // 2-D weight matrices in F16 (norms and biases stay F32)
  bool tie_embeddings = false;       // no output.weight: llama.cpp reuses token_embd (as Qwen2.5-0.5B does)
};

// "tiny" | "small" | "medium". kInvalidArgument for any other name.
Result<TestModelPreset> FindTestModelPreset(const std::string& name);

struct TestModelOptions {
  std::string out_path;            // written via `<out_path>.tmp` + rename; never left half-written
  uint64_t seed = 0;               // weights are a pure function of (seed, preset)
  std::string preset = "tiny";     // see FindTestModelPreset
  std::string vocab_path;          // vocab-only GGUF; every `tokenizer.*` key is copied
  std::string chat_template_path;  // Jinja file stored as tokenizer.chat_template
  // Logit bias of the end-of-generation tokens (EOS, EOT, <|im_end|>). The default keeps greedy outputs running
  // to max_new_tokens; a value near +0.2 makes greedy outputs end at prompt-dependent, varied lengths (for
  // scheduling benchmarks).
  float eos_bias = -1.0f;
};

struct TestModelStats {
  uint64_t n_params = 0;       // elements over all tensors
  uint64_t bytes_written = 0;  // file size
  uint32_t n_vocab = 0;        // tokens copied from the vocab GGUF
};

// Writes the model to options.out_path. Errors: kInvalidArgument (unknown preset, vocab without tokens or with
// an unsupported value type), kNotFound/kIOError (vocab, template or output I/O), kCorruption (vocab not a GGUF).
// On any error no file is left at out_path or `<out_path>.tmp` (an existing out_path is left untouched).
Result<TestModelStats> WriteTestModel(Env* env, const TestModelOptions& options);

struct TestModelCheck {
  int n_prompt_tokens = 0;  // tokens of the fixed prompt "Hello, world"
  int n_generated = 0;      // greedy tokens before an end-of-generation token, at most n_generate
  std::string text;         // their detokenized text (special tokens not rendered)
};

// Loads model_path with llama.cpp (CPU and whatever backends the build has), decodes the prompt, and
// greedy-generates up to n_generate tokens. kInternal with llama.cpp's last error line when loading or decoding
// fails. REQUIRES: n_generate > 0.
Result<TestModelCheck> CheckTestModel(const std::string& model_path, int n_generate);

// `text` as a JSON string literal (quotes included); invalid UTF-8 bytes become U+FFFD.
std::string JsonQuote(const std::string& text);

}  // namespace mmirage::tools
