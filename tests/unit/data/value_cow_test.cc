// Value's copy-on-write under threads (issue #13 item 11): copies are handed to other threads, which mutate or
// drop theirs while the owner mutates its own. Whatever the interleaving, no holder ever sees another's change,
// and each one's mutations are all there. Asserts on contents only, never on reference counts; the sanitizer
// build (thread sanitizer where available) also checks that the sharing is race-free.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "data/value.h"

namespace mmirage {
namespace {

Value Original() {
  Value inner = Value::EmptyArray();
  for (int i = 0; i < 8; ++i) inner.Push(i);
  Value o = Value::EmptyObject();
  o.Set("name", "original");
  o.Set("inner", inner);
  o.Set("list", Value::EmptyArray());
  return o;
}

TEST(ValueCowTest, MutatingACopyNeverChangesTheOriginalUnderConcurrentCopies) {
  const Value reference = Original();
  Value shared = Original();
  constexpr int kThreads = 4, kRounds = 2000;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    // Each thread gets its own copy (sharing the containers with `shared`), then copies and mutates copies of it.
    threads.emplace_back([&failures, mine = shared, t]() mutable {
      size_t mine_inner = 8;  // what `mine` must still hold, whatever the other holders do
      std::string mine_name = "original";
      for (int r = 0; r < kRounds; ++r) {
        Value copy = mine;
        copy.Set("name", "thread " + std::to_string(t));
        Value inner = *copy.Find("inner");
        inner.Push(r);
        copy.Set("inner", inner);
        Value dropped = mine;  // a copy made and dropped while others mutate theirs
        (void)dropped;
        if (copy.Find("inner")->size() != mine_inner + 1 || mine.Find("inner")->size() != mine_inner ||
            mine.Find("name")->as_string() != mine_name || copy.Find("inner")->as_array().back() != Value(r))
          failures.fetch_add(1);
        if (r % 2 == 0) {  // sometimes carry on from the mutated copy (sharing its containers)
          mine = copy;
          mine_inner += 1;
          mine_name = "thread " + std::to_string(t);
        } else {
          mine = Original();
          mine_inner = 8;
          mine_name = "original";
        }
      }
    });
  }
  // Meanwhile the owner mutates its own value in place (it shares containers with copies other threads hold).
  for (int r = 0; r < kRounds; ++r) {
    Value list = *shared.Find("list");
    list.Push(r);
    shared.Set("list", list);
    Value inner = *shared.Find("inner");
    inner = Value::EmptyArray();
    for (int i = 0; i < 8; ++i) inner.Push(i);
    shared.Set("inner", inner);
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(shared.Find("list")->size(), static_cast<size_t>(kRounds));
  EXPECT_EQ(*shared.Find("inner"), *reference.Find("inner"));
  EXPECT_EQ(shared.Find("name")->as_string(), "original");
}

TEST(ValueCowTest, ACopyIsIndependentOfTheOriginalAndOfOtherCopies) {
  Value a = Value::EmptyArray();
  a.Push(1);
  Value b = a;
  Value c = b;
  b.Push(2);
  c.Push(3);
  c.Push(4);
  EXPECT_EQ(a, Value(Value::Array{Value(1)}));
  EXPECT_EQ(b, Value(Value::Array{Value(1), Value(2)}));
  EXPECT_EQ(c, Value(Value::Array{Value(1), Value(3), Value(4)}));
  Value o = Value::EmptyObject();
  o.Set("k", a);
  Value p = o;
  p.Set("k", b);
  EXPECT_EQ(*o.Find("k"), a);
  EXPECT_EQ(*p.Find("k"), b);
}

}  // namespace
}  // namespace mmirage
