// Each iteration: admit queued requests into idle slots (a finished slot takes the next request at once; no
// batch barrier unless LoopOptions::batch_barrier), build one batch with a token for every generating slot, the
// next chunk of the shared prefix and chunks of prompts being prefilled (n_batch tokens in all; logits only
// where a token will be sampled), decode it, sample, and finish the slots that ended.
//
// Images (vision models, `mctx` non-null): before each batch, at most one slot whose prefill reached an image has
// that image encoded (or its embeddings taken from the encode cache) and decoded into its sequence, so other
// sequences wait for at most one image encode per iteration. A prompt's text is batched up to its next image.
// An image that cannot be encoded fails its request with kInvalidArgument.
//
// Failures are isolated (the "blast radius" rule): when the KV cache has no room the loop drops the shared
// prefix, then halves the batch; a single token that still does not fit, or a decode error, finishes only the
// requests whose tokens were in the failing part with kError.

#include "engine/llama/llama_loop.h"

#include <cmath>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "mtmd-helper.h"

namespace mmirage::engine {

DecodeLoop::DecodeLoop(const llama_model* model, llama_context* ctx, mtmd_context* mctx, const LoopOptions& options)
    : vocab_(llama_model_get_vocab(model)),
      ctx_(ctx),
      mem_(llama_get_memory(ctx)),
      mctx_(mctx),
      n_embd_inp_(llama_model_n_embd_inp(model)),
      options_(options),
      image_cache_(options.image_cache_bytes),
      batch_(llama_batch_init(options.n_batch, 0, 1)) {
  slots_.reserve(static_cast<size_t>(options_.n_parallel));
  for (int i = 0; i < options_.n_parallel; ++i) slots_.emplace_back(i);
  if (options_.prefix_reuse) {
    // The extra sequence, after the n_parallel slot sequences.
    prefix_ = std::make_unique<SharedPrefix>(mem_, options_.n_parallel, options_.min_prefix_tokens);
  }
  thread_ = std::thread([this] { Run(); });
}

DecodeLoop::~DecodeLoop() {
  Stop();
  llama_batch_free(batch_);
}

std::unique_ptr<PreparedRequest> DecodeLoop::Enqueue(std::unique_ptr<PreparedRequest> request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || closed_) return request;
    queue_.push_back(std::move(request));
  }
  cv_.notify_one();
  return nullptr;
}

void DecodeLoop::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

EngineCounters DecodeLoop::counters() const {
  EngineCounters c;
  c.prompt_tokens_evaluated = prompt_tokens_evaluated_.load();
  c.prompt_tokens_reused = prompt_tokens_reused_.load();
  c.tokens_generated = tokens_generated_.load();
  c.decode_calls = decode_calls_.load();
  c.images_encoded = images_encoded_.load();
  c.images_reused = images_reused_.load();
  c.image_tokens = image_tokens_.load();
  return c;
}

void DecodeLoop::Run() {
  while (WaitForWork()) {
    Admit();
    EvalOneImage();
    BuildBatch();
    if (!entries_.empty()) DecodeBatch();
  }
  FailEverything();
}

bool DecodeLoop::HasWorkLocked() const {
  if (!queue_.empty()) return true;
  if (prefix_ && prefix_->needs_eval()) return true;
  for (const Slot& s : slots_) {
    if (!s.idle()) return true;
  }
  return false;
}

bool DecodeLoop::WaitForWork() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return stopping_ || HasWorkLocked(); });
  return !stopping_;
}

void DecodeLoop::Admit() {
  // Take what can start now: requests that already failed need no slot; the others need an idle one.
  std::vector<std::unique_ptr<PreparedRequest>> taken;
  {
    int n_idle = 0;
    for (const Slot& s : slots_) n_idle += s.idle() ? 1 : 0;
    // batch_barrier (benchmarks only): new requests wait until every sequence is idle.
    const bool barrier = options_.batch_barrier && n_idle < options_.n_parallel;
    std::lock_guard<std::mutex> lock(mu_);
    while (!queue_.empty()) {
      bool failed = !queue_.front()->error.ok();
      if (!failed) {
        if (barrier || n_idle == 0) break;
        --n_idle;
      }
      taken.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
  }
  size_t next_slot = 0;
  for (auto& request : taken) {
    if (!request->error.ok()) {
      Completion c;
      c.prompt_tokens = static_cast<int64_t>(request->prompt.size());
      c.finish = FinishReason::kError;
      c.error = std::move(request->error);
      request->done(std::move(c));
      continue;
    }
    while (!slots_[next_slot].idle()) ++next_slot;
    StartRequest(static_cast<int>(next_slot), std::move(request));
  }
  if (prefix_ && prefix_->ready()) PromoteWaiters();
}

void DecodeLoop::StartRequest(int slot_index, std::unique_ptr<PreparedRequest> request) {
  const int n_prompt = static_cast<int>(request->prompt.size());
  Status error;
  if (n_prompt == 0) {
    error = Status::InvalidArgument("prompt is empty (no tokens)");
  } else if (n_prompt > options_.n_ctx_seq - 1) {
    error = Status::InvalidArgument("prompt has " + std::to_string(n_prompt) + " tokens, more than the context of " +
                                    std::to_string(options_.n_ctx_seq - 1));
  }
  if (!error.ok() || request->max_new_tokens <= 0) {
    Completion c;
    c.prompt_tokens = n_prompt;
    c.finish = error.ok() ? FinishReason::kLength : FinishReason::kError;
    c.error = std::move(error);
    request->done(std::move(c));
    return;
  }

  Slot& slot = slots_[static_cast<size_t>(slot_index)];
  slot.Start(std::move(request));
  if (!prefix_) return;
  // Only the text before the first image may be shared (the prefix sequence is evaluated from tokens alone).
  const int n_text = slot.text_prefix_len();
  SharedPrefix::Match match =
      n_text == static_cast<int>(slot.prompt().size())
          ? prefix_->OnPrompt(slot.prompt(), HasWaiters())
          : prefix_->OnPrompt(std::vector<llama_token>(slot.prompt().begin(), slot.prompt().begin() + n_text),
                              HasWaiters());
  if (match.defined) OnPrefixDefined(slot);
  if (match.n_tokens > 0) slot.WaitForPrefix(match.n_tokens);
}

void DecodeLoop::OnPrefixDefined(const Slot& definer) {
  const size_t n_prefix = static_cast<size_t>(prefix_->size());
  Slot* donor = nullptr;
  for (Slot& other : slots_) {
    if (&other == &definer || other.idle() || other.state() == SlotState::kWaitPrefix) continue;
    if (CommonPrefixLength(other.prompt(), prefix_->tokens()) < n_prefix) continue;
    if (other.n_past() == 0) {
      // Admitted just before (typically in this same round) and nothing evaluated yet: wait for the prefix.
      int n = std::min(prefix_->size(), static_cast<int>(other.prompt().size()) - 1);
      if (n > 0) other.WaitForPrefix(n);
    } else if (donor == nullptr || other.n_past() > donor->n_past()) {
      donor = &other;
    }
  }
  // A sequence that already evaluated (part of) the prefix lends its cells, so the prefix costs nothing more.
  if (donor != nullptr) prefix_->Adopt(donor->seq_id(), std::min(donor->n_past(), prefix_->size()));
}

bool DecodeLoop::HasWaiters() const {
  for (const Slot& s : slots_) {
    if (s.state() == SlotState::kWaitPrefix) return true;
  }
  return false;
}

void DecodeLoop::PromoteWaiters() {
  for (Slot& s : slots_) {
    if (s.state() != SlotState::kWaitPrefix) continue;
    // The prefix may have shrunk since the slot started waiting.
    int n = std::min(s.n_wait_prefix(), prefix_->size());
    prefix_->CopyTo(s.seq_id(), n);
    s.TakePrefix(n);
    prompt_tokens_reused_ += n;
  }
}

void DecodeLoop::DropPrefix() {
  prefix_->Drop();
  ++prefix_gen_;
  for (Slot& s : slots_) {
    if (s.state() == SlotState::kWaitPrefix) s.TakePrefix(0);  // evaluate the whole prompt instead
  }
}

void DecodeLoop::BuildBatch() {
  entries_.clear();
  int budget = options_.n_batch;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (s.state() != SlotState::kGenerate) continue;
    entries_.push_back({s.next_token(), s.pos(), static_cast<int>(i), true, false, 0});
    s.Advance(1);
    --budget;
  }
  if (prefix_ && prefix_->needs_eval() && budget > 0) {
    int from = prefix_->n_evaluated();
    int n = std::min(budget, prefix_->size() - from);
    for (int k = 0; k < n; ++k) {
      entries_.push_back(
          {prefix_->tokens()[static_cast<size_t>(from + k)], from + k, kPrefixSlot, false, true, prefix_gen_});
    }
    prefix_->MarkEvaluated(n);
    budget -= n;
  }
  for (size_t i = 0; i < slots_.size() && budget > 0; ++i) {
    Slot& s = slots_[i];
    if (s.state() != SlotState::kPrefill) continue;
    const int n_prompt = static_cast<int>(s.prompt().size());
    const int from = s.n_past();
    const llama_pos pos0 = s.pos();
    int n = std::min(budget, s.text_end() - from);  // text up to the next image (evaluated by EvalOneImage)
    if (n <= 0) continue;
    for (int k = 0; k < n; ++k) {
      const int idx = from + k;
      entries_.push_back(
          {s.prompt()[static_cast<size_t>(idx)], pos0 + k, static_cast<int>(i), idx == n_prompt - 1, true, 0});
    }
    s.Advance(n);
    budget -= n;
  }
}

void DecodeLoop::EvalOneImage() {
  if (mctx_ == nullptr) return;
  const size_t n = slots_.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (image_rr_ + k) % n;
    Slot& s = slots_[i];
    if (s.state() != SlotState::kPrefill) continue;
    const ImageSegment* image = s.image_at_next();
    if (image == nullptr) continue;
    image_rr_ = i + 1;
    Status st = EvalImage(s, *image);
    if (!st.ok()) FinishSlot(s, FinishReason::kError, std::move(st));
    return;  // one image per iteration: the other sequences' tokens go next
  }
}

Status DecodeLoop::EvalImage(Slot& slot, const ImageSegment& image) {
  const float* embd = nullptr;
  if (const std::vector<float>* hit = image_cache_.Find(image.id)) {
    embd = hit->data();
    ++images_reused_;
  } else {
    if (mtmd_encode_chunk(mctx_, image.chunk.get()) != 0) {
      return Status::InvalidArgument("the vision encoder failed on an image (" + std::to_string(image.n_tokens) +
                                     " tokens)");
    }
    ++images_encoded_;
    embd = mtmd_get_output_embd(mctx_);
    const size_t n_floats = static_cast<size_t>(image.n_tokens) * static_cast<size_t>(n_embd_inp_);
    if (const std::vector<float>* kept = image_cache_.Insert(image.id, embd, n_floats)) embd = kept->data();
  }
  const llama_pos pos0 = slot.pos();
  for (int attempt = 0; attempt < 2; ++attempt) {
    llama_pos new_pos = 0;
    const int ret = mtmd_helper_decode_image_chunk(mctx_, ctx_, image.chunk.get(), const_cast<float*>(embd), pos0,
                                                   slot.seq_id(), options_.n_batch, &new_pos, nullptr, nullptr);
    ++decode_calls_;
    if (ret == 0) {
      slot.AdvanceImage();
      prompt_tokens_evaluated_ += image.n_tokens;
      image_tokens_ += image.n_tokens;
      return Status::OK();
    }
    // A part may be in the cache: remove it before trying again or giving up.
    llama_memory_seq_rm(mem_, slot.seq_id(), pos0, -1);
    if (prefix_ && prefix_->has_cells()) {
      DropPrefix();  // the prefix's own cells may be what the image needs
      continue;
    }
    break;
  }
  return Status::Unavailable("decoding an image of " + std::to_string(image.n_tokens) +
                             " tokens failed (KV cache full? " + std::to_string(llama_n_ctx(ctx_)) +
                             " cells shared by all sequences)");
}

bool DecodeLoop::Alive(const BatchEntry& e) const {
  if (e.slot == kPrefixSlot) return prefix_ && e.prefix_gen == prefix_gen_;
  return !slots_[static_cast<size_t>(e.slot)].idle();
}

void DecodeLoop::DecodeBatch() {
  std::vector<int> batch_index(entries_.size(), -1);
  size_t n_view = entries_.size();
  size_t off = 0;
  while (off < entries_.size()) {
    const size_t end = std::min(entries_.size(), off + n_view);
    batch_.n_tokens = 0;
    int64_t n_prompt_tokens = 0;
    for (size_t i = off; i < end; ++i) {
      const BatchEntry& e = entries_[i];
      batch_index[i] = -1;
      if (!Alive(e)) continue;
      const int j = batch_.n_tokens++;
      batch_.token[j] = e.token;
      batch_.pos[j] = e.pos;
      batch_.n_seq_id[j] = 1;
      batch_.seq_id[j][0] = e.slot == kPrefixSlot ? prefix_->seq_id() : slots_[static_cast<size_t>(e.slot)].seq_id();
      batch_.logits[j] = e.logits;
      if (e.logits) batch_index[i] = j;
      n_prompt_tokens += e.is_prompt ? 1 : 0;
    }
    if (batch_.n_tokens == 0) {
      off = end;
      continue;
    }
    const int ret = llama_decode(ctx_, batch_);
    ++decode_calls_;
    if (ret == 0) {
      prompt_tokens_evaluated_ += n_prompt_tokens;
      SampleView(off, end, batch_index);
      off = end;
      continue;
    }
    if (ret == 1) {
      // No room in the KV cache. Free the cells only the shared prefix holds, then try smaller pieces; a single
      // token that still does not fit fails its own request only.
      if (prefix_ && prefix_->has_cells()) {
        DropPrefix();
      } else if (end - off > 1) {
        n_view = (end - off) / 2;
      } else {
        const BatchEntry& e = entries_[off];
        if (e.slot == kPrefixSlot) {
          DropPrefix();
        } else {
          FinishSlot(slots_[static_cast<size_t>(e.slot)], FinishReason::kError,
                     Status::Unavailable("the KV cache is full (" + std::to_string(llama_n_ctx(ctx_)) +
                                         " cells shared by all sequences)"));
        }
        off = end;
      }
      continue;
    }
    // Aborted, invalid batch or compute error: the requests with tokens in this piece fail; the others go on.
    const Status error = Status::Internal("llama_decode failed with code " + std::to_string(ret));
    for (size_t i = off; i < end; ++i) {
      const BatchEntry& e = entries_[i];
      if (!Alive(e)) continue;
      if (e.slot == kPrefixSlot) {
        DropPrefix();
      } else {
        FinishSlot(slots_[static_cast<size_t>(e.slot)], FinishReason::kError, error);
      }
    }
    off = end;
  }
  // Only now is every prefix chunk of this batch in the cache.
  if (prefix_ && prefix_->ready()) PromoteWaiters();
}

void DecodeLoop::SampleView(size_t begin, size_t end, const std::vector<int>& batch_index) {
  for (size_t i = begin; i < end; ++i) {
    const BatchEntry& e = entries_[i];
    if (batch_index[i] < 0 || e.slot == kPrefixSlot || !Alive(e)) continue;
    Slot& slot = slots_[static_cast<size_t>(e.slot)];
    llama_token token = 0;
    try {
      if (slot.fast_greedy()) {
        token = Argmax(batch_index[i], slot.ignore_eos());
      } else {
        token = common_sampler_sample(slot.sampler(), ctx_, batch_index[i]);
        common_sampler_accept(slot.sampler(), token, /*is_generated=*/true);
      }
    } catch (const std::runtime_error& ex) {
      // The grammar sampler throws when it cannot accept a token.
      FinishSlot(slot, FinishReason::kError, Status::InvalidArgument(std::string("sampling failed: ") + ex.what()));
      continue;
    }
    ++tokens_generated_;
    switch (slot.OnToken(token, vocab_, options_.n_ctx_seq)) {
      case TokenOutcome::kContinue: break;
      case TokenOutcome::kStop: FinishSlot(slot, FinishReason::kStop, Status::OK()); break;
      case TokenOutcome::kLength: FinishSlot(slot, FinishReason::kLength, Status::OK()); break;
    }
  }
}

llama_token DecodeLoop::Argmax(int batch_index, bool ban_eog) {
  float* logits = llama_get_logits_ith(ctx_, batch_index);
  const int n_vocab = llama_vocab_n_tokens(vocab_);
  while (true) {
    int best = 0;
    for (int t = 1; t < n_vocab; ++t) {
      if (logits[t] > logits[best]) best = t;
    }
    if (!ban_eog || !llama_vocab_is_eog(vocab_, best)) return best;
    logits[best] = -INFINITY;  // banned: take the next best (rare, and these logits are not read again)
  }
}

void DecodeLoop::FinishSlot(Slot& slot, FinishReason finish, Status error) {
  llama_memory_seq_rm(mem_, slot.seq_id(), -1, -1);
  auto [completion, done] = slot.Finish(finish, std::move(error));
  done(std::move(completion));
}

void DecodeLoop::FailEverything() {
  const Status shut = Status::Unavailable("engine shut down");
  for (Slot& s : slots_) {
    if (!s.idle()) FinishSlot(s, FinishReason::kError, shut);
  }
  std::deque<std::unique_ptr<PreparedRequest>> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    pending.swap(queue_);
  }
  for (auto& request : pending) {
    Completion c;
    c.prompt_tokens = static_cast<int64_t>(request->prompt.size());
    c.finish = FinishReason::kError;
    c.error = request->error.ok() ? shut : std::move(request->error);
    request->done(std::move(c));
  }
}

}  // namespace mmirage::engine
