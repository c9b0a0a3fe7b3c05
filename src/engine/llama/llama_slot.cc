#include "engine/llama/llama_slot.h"

#include <algorithm>
#include <utility>

namespace mmirage::engine {

size_t FindStop(const std::string& text, const std::vector<std::string>& stops, size_t scan_from) {
  size_t best = std::string::npos;
  for (const std::string& stop : stops) {
    if (stop.empty() || stop.size() > text.size()) continue;
    size_t from = scan_from >= stop.size() ? scan_from - stop.size() + 1 : 0;
    size_t pos = text.find(stop, from);
    if (pos < best) best = pos;
  }
  return best;
}

void Slot::Start(std::unique_ptr<PreparedRequest> request) {
  request_ = std::move(request);
  state_ = SlotState::kPrefill;
  n_past_ = 0;
  n_cached_ = 0;
  n_wait_prefix_ = 0;
  n_generated_ = 0;
  next_image_ = 0;
  pos_saved_ = 0;
  next_token_ = 0;
  text_.clear();
  max_stop_len_ = 0;
  for (const std::string& s : request_->stop) max_stop_len_ = std::max(max_stop_len_, s.size());
}

TokenOutcome Slot::OnToken(llama_token token, const llama_vocab* vocab, int n_ctx_seq) {
  ++n_generated_;
  if ((!request_->ignore_eos || request_->has_grammar) && llama_vocab_is_eog(vocab, token)) {
    return TokenOutcome::kStop;
  }
  // special = false: control tokens (chat markers) are not part of the text, as with skip_special_tokens.
  size_t old_len = text_.size();
  text_ += common_token_to_piece(vocab, token, /*special=*/false);
  if (max_stop_len_ > 0) {
    size_t pos = FindStop(text_, request_->stop, old_len);
    if (pos != std::string::npos) {
      text_.resize(pos);
      return TokenOutcome::kStop;
    }
  }
  if (n_generated_ >= request_->max_new_tokens) return TokenOutcome::kLength;
  // The token would be fed at position n_past_; the sequence has no room left for it.
  if (n_past_ >= n_ctx_seq) return TokenOutcome::kLength;
  next_token_ = token;
  state_ = SlotState::kGenerate;
  return TokenOutcome::kContinue;
}

std::pair<Completion, CompletionCallback> Slot::Finish(FinishReason finish, Status error) {
  Completion c;
  c.text = std::move(text_);
  c.prompt_tokens = static_cast<int64_t>(request_->prompt.size());
  c.completion_tokens = n_generated_;
  c.cached_prompt_tokens = n_cached_;
  c.finish = finish;
  c.error = std::move(error);
  CompletionCallback done = std::move(request_->done);
  request_.reset();
  text_.clear();
  state_ = SlotState::kIdle;
  n_past_ = 0;
  n_cached_ = 0;
  n_wait_prefix_ = 0;
  n_generated_ = 0;
  next_image_ = 0;
  pos_saved_ = 0;
  return {std::move(c), std::move(done)};
}

}  // namespace mmirage::engine
