// DispatchQueue: generations that are ready to be sent to an engine, and the order they go out in.
// kInput sends them as they came (first in, first out). kPrefix groups them by the prompt's leading bytes: it
// sweeps the waiting prompts in sorted order, continuing after the last one sent, so that consecutive requests share
// a prefix (the engines' prefix caches hit) while every waiting prompt is reached within one sweep; equal keys keep
// arrival order. The caller bounds how many wait (the scheduler's window), so memory stays flat.
// Plain data; thread-compatible (one user at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <tuple>

namespace mmirage::pipeline {

class DispatchQueue {
 public:
  enum class Order { kInput, kPrefix };
  struct Item {
    uint64_t seq = 0;   // the row's position in the stream
    size_t output = 0;  // the output's index
    std::string prompt;
  };

  // `key_bytes`: how many leading prompt bytes group requests (kPrefix).
  explicit DispatchQueue(Order order, size_t key_bytes = 512) : order_(order), key_bytes_(key_bytes) {}

  void Push(Item item);
  // The next item to send. REQUIRES: !empty().
  Item Pop();
  bool empty() const { return fifo_.empty() && sorted_.empty(); }
  size_t size() const { return fifo_.size() + sorted_.size(); }

 private:
  using Key = std::tuple<size_t, std::string, uint64_t>;  // output, leading prompt bytes, seq
  Order order_;
  size_t key_bytes_;
  std::deque<Item> fifo_;
  std::map<Key, Item> sorted_;
  Key last_{0, "", 0};  // the key sent last: the sweep continues after it
};

}  // namespace mmirage::pipeline
