// Private to the llama engine. Slot: the state of one parallel sequence of the decode loop.
//
// A slot is idle, waiting for the shared prefix to be evaluated, prefilling its prompt, or generating. It owns
// the request it serves (and with it the request's sampler). The slot knows nothing about batches or the KV
// cache: the loop positions its tokens and clears its sequence; the slot decides what a sampled token means
// (end of generation, stop string, length limit) and builds the Completion.
//
// Thread-safety: used by the decode-loop thread only.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/llama/llama_request.h"

namespace mmirage::engine {

enum class SlotState { kIdle, kWaitPrefix, kPrefill, kGenerate };

// What a sampled token did to the request.
enum class TokenOutcome { kContinue, kStop, kLength };

class Slot {
 public:
  explicit Slot(int seq_id) : seq_id_(seq_id) {}
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  Slot(Slot&&) = default;
  Slot& operator=(Slot&&) = default;

  // Takes `request` (REQUIRES: idle, request->error ok). The slot starts in kPrefill at position 0.
  void Start(std::unique_ptr<PreparedRequest> request);

  // Handles the token sampled for this slot (already accepted by the sampler): counts it, appends its text
  // and checks, in order, end-of-generation, stop strings, max_new_tokens and the context of `n_ctx_seq`
  // positions. On kContinue the token becomes next_token() and the slot is generating.
  TokenOutcome OnToken(llama_token token, const llama_vocab* vocab, int n_ctx_seq);

  // Ends the request: returns the completion to deliver with the request's callback, and makes the slot
  // idle. `error` must be non-OK iff finish == kError. REQUIRES: !idle().
  std::pair<Completion, CompletionCallback> Finish(FinishReason finish, Status error);

  int seq_id() const { return seq_id_; }
  SlotState state() const { return state_; }
  bool idle() const { return state_ == SlotState::kIdle; }
  const std::vector<llama_token>& prompt() const { return request_->prompt; }
  common_sampler* sampler() const { return request_->sampler.get(); }
  bool fast_greedy() const { return request_->fast_greedy; }
  bool ignore_eos() const { return request_->ignore_eos; }
  int n_past() const { return n_past_; }
  // Position of the next token: n_past() less what images saved (M-RoPE images take fewer positions than cells).
  llama_pos pos() const { return n_past_ - pos_saved_; }
  // The image whose first entry is the next to evaluate, or nullptr.
  const ImageSegment* image_at_next() const {
    if (next_image_ >= request_->images.size()) return nullptr;
    const ImageSegment& im = request_->images[next_image_];
    return im.start == n_past_ ? &im : nullptr;
  }
  // Index of the first prompt entry, from n_past() on, that is not text (an image's start), or the prompt size.
  int text_end() const {
    return next_image_ < request_->images.size() ? request_->images[next_image_].start
                                                 : static_cast<int>(request_->prompt.size());
  }
  // Leading prompt entries that are text (the shared prefix may cover only these).
  int text_prefix_len() const {
    return request_->images.empty() ? static_cast<int>(request_->prompt.size()) : request_->images.front().start;
  }
  int n_cached() const { return n_cached_; }
  int n_wait_prefix() const { return n_wait_prefix_; }
  llama_token next_token() const { return next_token_; }
  bool prompt_done() const { return n_past_ >= static_cast<int>(request_->prompt.size()); }

  // The loop placed `n` more of this slot's tokens in the batch.
  void Advance(int n) { n_past_ += n; }
  // The image at n_past() is in this sequence's KV now.
  void AdvanceImage() {
    const ImageSegment& im = request_->images[next_image_++];
    n_past_ += im.n_tokens;
    pos_saved_ += im.n_tokens - im.n_pos;
  }
  // Waits for the shared prefix; `n` tokens will be copied from it.
  void WaitForPrefix(int n) {
    state_ = SlotState::kWaitPrefix;
    n_wait_prefix_ = n;
  }
  // The first `n` tokens are in this sequence's KV already (copied from the shared prefix).
  void TakePrefix(int n) {
    state_ = SlotState::kPrefill;
    n_past_ = n;
    n_cached_ = n;
    n_wait_prefix_ = 0;
  }

 private:
  int seq_id_;
  SlotState state_ = SlotState::kIdle;
  std::unique_ptr<PreparedRequest> request_;
  size_t next_image_ = 0;  // index in request_->images of the first image not yet evaluated
  int pos_saved_ = 0;      // cells minus positions of the images evaluated
  int n_past_ = 0;         // positions of this sequence in the KV cache (incl. those in the current batch)
  int n_cached_ = 0;       // of them, copied from the shared prefix
  int n_wait_prefix_ = 0;  // kWaitPrefix: prefix tokens to copy once the prefix is evaluated
  int n_generated_ = 0;
  llama_token next_token_ = 0;
  std::string text_;
  size_t max_stop_len_ = 0;
};

// Position of the earliest stop string in `text` that extends past its first `scan_from` bytes (those were
// checked before), or npos. Empty stop strings never match.
size_t FindStop(const std::string& text, const std::vector<std::string>& stops, size_t scan_from);

}  // namespace mmirage::engine
