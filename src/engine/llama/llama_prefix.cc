// Policy (the tokens are decided here; the loop evaluates them through its batches):
//  - no prefix yet: the longest common prefix (LCP) of the last two prompts, when at least `min_tokens` long;
//  - a prompt that shares a shorter but still long-enough run shrinks the prefix (cells past it are dropped);
//  - a prompt that shares less is a miss; two consecutive misses sharing a long-enough run replace the prefix
//    (unless requests are waiting for it), so a workload that changes its instruction gets a new prefix, while
//    two interleaved instructions do not thrash.
// The prefix never grows in place: a longer one is a replacement. Sequences that copied cells keep them: in a
// unified KV cache a copy only tags the same cells with one more sequence id, so dropping the prefix sequence
// never disturbs them.

#include "engine/llama/llama_prefix.h"

#include <algorithm>

namespace mmirage::engine {

size_t CommonPrefixLength(const std::vector<llama_token>& a, const std::vector<llama_token>& b) {
  size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

SharedPrefix::SharedPrefix(llama_memory_t mem, llama_seq_id seq_id, int min_tokens)
    : mem_(mem), seq_id_(seq_id), min_tokens_(static_cast<size_t>(std::max(1, min_tokens))) {}

SharedPrefix::Match SharedPrefix::OnPrompt(const std::vector<llama_token>& prompt, bool has_waiters) {
  Match m;
  if (!tokens_.empty()) {
    size_t n = CommonPrefixLength(tokens_, prompt);
    if (n >= min_tokens_) {
      if (n < tokens_.size()) Shrink(n);
      candidate_.clear();
    } else {
      // A miss. Replace the prefix only when the previous miss shares a long-enough run with this one.
      size_t n_cand = candidate_.empty() ? 0 : CommonPrefixLength(candidate_, prompt);
      if (has_waiters || n_cand < min_tokens_) {
        candidate_ = prompt;
        return m;
      }
      Drop();
      Define(prompt, n_cand);
      m.defined = true;
    }
  } else {
    size_t n_cand = candidate_.empty() ? 0 : CommonPrefixLength(candidate_, prompt);
    if (n_cand < min_tokens_) {
      candidate_ = prompt;
      return m;
    }
    Define(prompt, n_cand);
    m.defined = true;
  }
  size_t usable = std::min(tokens_.size(), prompt.empty() ? 0 : prompt.size() - 1);
  m.n_tokens = static_cast<int>(usable);
  return m;
}

void SharedPrefix::Define(const std::vector<llama_token>& prompt, size_t n) {
  tokens_.assign(prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(n));
  n_evaluated_ = 0;
  candidate_.clear();
}

void SharedPrefix::Shrink(size_t n) {
  tokens_.resize(n);
  if (n_evaluated_ > static_cast<int>(n)) {
    llama_memory_seq_rm(mem_, seq_id_, static_cast<llama_pos>(n), -1);
    n_evaluated_ = static_cast<int>(n);
  }
}

void SharedPrefix::Adopt(llama_seq_id src, int n) {
  llama_memory_seq_cp(mem_, src, seq_id_, 0, static_cast<llama_pos>(n));
  n_evaluated_ = n;
}

void SharedPrefix::CopyTo(llama_seq_id dst, int n) const {
  llama_memory_seq_cp(mem_, seq_id_, dst, 0, static_cast<llama_pos>(n));
}

void SharedPrefix::Drop() {
  if (n_evaluated_ > 0) llama_memory_seq_rm(mem_, seq_id_, -1, -1);
  tokens_.clear();
  n_evaluated_ = 0;
}

}  // namespace mmirage::engine
