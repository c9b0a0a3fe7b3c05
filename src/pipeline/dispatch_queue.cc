#include "pipeline/dispatch_queue.h"

#include <utility>

#include "util/status.h"

namespace mmirage::pipeline {

void DispatchQueue::Push(Item item) {
  if (order_ == Order::kInput) {
    fifo_.push_back(std::move(item));
    return;
  }
  Key key{item.output, item.prompt.substr(0, key_bytes_), item.seq};
  sorted_.emplace(std::move(key), std::move(item));
}

DispatchQueue::Item DispatchQueue::Pop() {
  MMIRAGE_CHECK(!empty());
  if (order_ == Order::kInput) {
    Item item = std::move(fifo_.front());
    fifo_.pop_front();
    return item;
  }
  // The first key after the last one sent; past the end the sweep starts over.
  auto it = sorted_.upper_bound(last_);
  if (it == sorted_.end()) it = sorted_.begin();
  last_ = it->first;
  Item item = std::move(it->second);
  sorted_.erase(it);
  return item;
}

}  // namespace mmirage::pipeline
