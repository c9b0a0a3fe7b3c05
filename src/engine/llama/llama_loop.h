// Private to the llama engine. DecodeLoop: the one thread that owns the llama context. Each iteration admits queued
// requests into idle slots, builds one batch (a token per generating slot, the next chunk of the shared prefix and
// of prompts being prefilled, n_batch tokens in all), decodes it, samples, and finishes the slots that ended; with
// a vision model, at most one image per iteration is encoded (or taken from the encode cache).
// Errors are isolated per request: no KV room → the shared prefix is dropped, then the batch halved; a token that
// still does not fit, a decode error or an image that cannot be encoded finishes only the requests concerned.
// Thread-safety: Enqueue, Stop and counters may be called from any thread. Callbacks run on the loop thread.
// Ownership: borrows the model and the context, which must outlive the loop.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/llama/llama_image_cache.h"
#include "engine/llama/llama_prefix.h"
#include "engine/llama/llama_request.h"
#include "engine/llama/llama_slot.h"

namespace mmirage::engine {

class DecodeLoop {
 public:
  // Starts the loop thread.
  // `mctx` (nullable) is the vision projector's context; borrowed like the model.
  DecodeLoop(const llama_model* model, llama_context* ctx, mtmd_context* mctx, const LoopOptions& options);
  ~DecodeLoop();  // Stop()
  DecodeLoop(const DecodeLoop&) = delete;
  DecodeLoop& operator=(const DecodeLoop&) = delete;

  // Queues `request`. Returns nullptr when queued; returns the request back when the loop has stopped (the
  // caller then finishes it).
  std::unique_ptr<PreparedRequest> Enqueue(std::unique_ptr<PreparedRequest> request);
  // Stops the loop: active and queued requests finish with kError "engine shut down"; joins. Idempotent.
  void Stop();
  EngineCounters counters() const;

 private:
  static constexpr int kPrefixSlot = -1;
  struct BatchEntry {
    llama_token token;
    llama_pos pos;
    int slot;        // index in slots_, or kPrefixSlot
    bool logits;     // sample after this token
    bool is_prompt;  // a prompt (or prefix) token, not a generated one
    int prefix_gen;  // for prefix tokens: prefix_gen_ when the entry was made
  };

  void Run();
  bool WaitForWork();  // false when stopping
  bool HasWorkLocked() const;
  void Admit();
  void StartRequest(int slot_index, std::unique_ptr<PreparedRequest> request);
  void OnPrefixDefined(const Slot& definer);
  void EvalOneImage();
  Status EvalImage(Slot& slot, const ImageSegment& image);
  void BuildBatch();
  void DecodeBatch();
  void SampleView(size_t begin, size_t end, const std::vector<int>& batch_index);
  bool Alive(const BatchEntry& e) const;
  // Greedy choice straight from the logits of batch row `batch_index`, skipping end-of-generation tokens when
  // `ban_eog`.
  llama_token Argmax(int batch_index, bool ban_eog);
  void FinishSlot(Slot& slot, FinishReason finish, Status error);
  void DropPrefix();
  void PromoteWaiters();
  bool HasWaiters() const;
  void FailEverything();

  const llama_vocab* vocab_;
  llama_context* ctx_;
  llama_memory_t mem_;
  mtmd_context* mctx_;
  int n_embd_inp_ = 0;
  LoopOptions options_;
  ImageEmbeddingCache image_cache_;
  size_t image_rr_ = 0;  // round-robin start for the next image evaluation
  std::vector<Slot> slots_;
  std::unique_ptr<SharedPrefix> prefix_;  // null when prefix reuse is off
  int prefix_gen_ = 0;                    // bumped when the prefix is dropped (its batch entries die)
  llama_batch batch_;
  std::vector<BatchEntry> entries_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<PreparedRequest>> queue_;  // guarded by mu_
  bool stopping_ = false;                               // guarded by mu_
  bool closed_ = false;                                 // guarded by mu_: the loop no longer takes requests

  std::atomic<int64_t> prompt_tokens_evaluated_{0};
  std::atomic<int64_t> prompt_tokens_reused_{0};
  std::atomic<int64_t> tokens_generated_{0};
  std::atomic<int64_t> decode_calls_{0};
  std::atomic<int64_t> images_encoded_{0};
  std::atomic<int64_t> images_reused_{0};
  std::atomic<int64_t> image_tokens_{0};

  std::thread thread_;  // last: starts after every member above is ready
};

}  // namespace mmirage::engine
