// Private to the llama engine. ImageEmbeddingCache: image embeddings (the vision encoder's output) by image id,
// least recently used first out, within a byte budget, so that the same image asked about several times is
// encoded once. An entry larger than the whole budget is not kept.
//
// Thread-safety: used by the decode-loop thread only.
#pragma once

#include <cstddef>
#include <list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mmirage::engine {

class ImageEmbeddingCache {
 public:
  explicit ImageEmbeddingCache(size_t capacity_bytes) : capacity_(capacity_bytes) {}

  // The embeddings of `id`, or nullptr. A hit becomes the most recently used entry.
  const std::vector<float>* Find(const std::string& id) {
    auto it = map_.find(id);
    if (it == map_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second.second);
    return &it->second.first;
  }

  // Keeps a copy of `n` floats under `id` (evicting older entries to fit); returns the kept copy, or nullptr
  // when it does not fit the budget at all.
  const std::vector<float>* Insert(const std::string& id, const float* data, size_t n) {
    const size_t bytes = n * sizeof(float);
    if (bytes > capacity_ || id.empty()) return nullptr;
    if (auto it = map_.find(id); it != map_.end()) return &it->second.first;
    while (used_ + bytes > capacity_ && !order_.empty()) {
      auto victim = map_.find(order_.back());
      used_ -= victim->second.first.size() * sizeof(float);
      map_.erase(victim);
      order_.pop_back();
    }
    order_.push_front(id);
    auto [it, _] = map_.emplace(id, std::make_pair(std::vector<float>(data, data + n), order_.begin()));
    used_ += bytes;
    return &it->second.first;
  }

  size_t used_bytes() const { return used_; }

 private:
  size_t capacity_;
  size_t used_ = 0;
  std::list<std::string> order_;  // most recent first
  std::unordered_map<std::string, std::pair<std::vector<float>, std::list<std::string>::iterator>> map_;
};

}  // namespace mmirage::engine
