// Private to the llama engine. SharedPrefix: the leading tokens that recent prompts have in common, kept in the
// KV cache under one extra sequence so that it is evaluated once and its cells are shared with new sequences.
// This class decides the tokens (policy in llama_prefix.cc: the longest common prefix of recent prompts, at least
// `min_tokens` long, shrunk or replaced as prompts change); the loop evaluates them through its batches. Dropping
// the prefix never disturbs sequences that copied its cells.
// Thread-safety: used by the decode-loop thread only. Borrows `mem`, which must outlive this object.
#pragma once

#include <cstddef>
#include <vector>

#include "llama.h"

namespace mmirage::engine {

size_t CommonPrefixLength(const std::vector<llama_token>& a, const std::vector<llama_token>& b);

class SharedPrefix {
 public:
  SharedPrefix(llama_memory_t mem, llama_seq_id seq_id, int min_tokens);
  SharedPrefix(const SharedPrefix&) = delete;
  SharedPrefix& operator=(const SharedPrefix&) = delete;

  struct Match {
    int n_tokens = 0;      // leading prompt tokens the request may take from the prefix (0: none); at most
                           // prompt.size() - 1 so that the request still evaluates a token and gets logits
    bool defined = false;  // the prefix was (re)defined by this prompt
  };
  // Called once per admitted prompt, in admission order. `has_waiters`: requests wait for the current prefix
  // (then it is not replaced).
  Match OnPrompt(const std::vector<llama_token>& prompt, bool has_waiters);

  bool empty() const { return tokens_.empty(); }
  int size() const { return static_cast<int>(tokens_.size()); }
  int n_evaluated() const { return n_evaluated_; }
  bool ready() const { return !tokens_.empty() && n_evaluated_ == size(); }
  bool needs_eval() const { return n_evaluated_ < size(); }
  bool has_cells() const { return n_evaluated_ > 0; }
  const std::vector<llama_token>& tokens() const { return tokens_; }
  llama_seq_id seq_id() const { return seq_id_; }

  // The loop placed tokens [n_evaluated(), n_evaluated() + n) in a batch (call Drop if that decode fails).
  void MarkEvaluated(int n) { n_evaluated_ += n; }
  // Takes the first `n` prefix positions from sequence `src`, which already evaluated them (its first tokens are
  // the prefix). REQUIRES: n_evaluated() == 0, n <= size().
  void Adopt(llama_seq_id src, int n);
  // Shares the first `n` prefix positions with `dst`. REQUIRES: ready(), n <= size().
  void CopyTo(llama_seq_id dst, int n) const;
  // Forgets the prefix and frees the cells only it holds (e.g. when the KV cache is full).
  void Drop();

 private:
  void Define(const std::vector<llama_token>& prompt, size_t n);
  void Shrink(size_t n);

  llama_memory_t mem_;
  llama_seq_id seq_id_;
  size_t min_tokens_;
  std::vector<llama_token> tokens_;
  int n_evaluated_ = 0;                 // leading prefix tokens in the KV cache (or in the batch being built)
  std::vector<llama_token> candidate_;  // the last prompt that did not use the prefix
};

}  // namespace mmirage::engine
