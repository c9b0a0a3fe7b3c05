// Synthetic vision pieces for tests: a random-weight LLaVA-style projector GGUF ("mmproj") that libmtmd loads
// beside a tiny text model, and small deterministic PNG images.
//
// The projector is the simplest one libmtmd supports: projector_type "mlp" (LLaVA-1.5: mm.0 → GELU → mm.2) over a
// tiny CLIP ViT (2 layers, width 32, 32×32 pixel input in 8×8 patches: 16 image tokens per image). Its output
// width is `text_n_embd`, which must be the text model's n_embd (64 for the tiny preset).
// Weights come from the same splitmix64 stream as the text model, keyed by (seed, tensor name).
//
// Thread-safety: free functions without shared state (ggml logging aside, as for test_model.h).
#pragma once

#include <cstdint>
#include <string>

#include "util/env.h"
#include "util/status.h"

namespace mmirage::tools {

// Image tokens one image becomes with the test projector.
constexpr int kTestMmprojImageTokens = 16;

struct TestMmprojOptions {
  std::string out_path;  // written via `<out_path>.tmp` + rename
  uint64_t seed = 0;
  uint32_t text_n_embd = 64;
};

// Errors: kIOError from the file system; nothing is left at out_path on error.
Status WriteTestMmproj(Env* env, const TestMmprojOptions& options);

// Writes a `width`×`height` RGB PNG whose pixels are a pure function of `seed` (a gradient plus noise, so that
// different seeds give different images and different bytes). Written via `<path>.tmp` + rename.
Status WriteTestPng(Env* env, const std::string& path, int width, int height, uint64_t seed);

}  // namespace mmirage::tools
