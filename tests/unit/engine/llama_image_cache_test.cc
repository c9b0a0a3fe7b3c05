// The image-encode cache of the llama engine (engine/llama_image_cache.h): LRU within a byte budget.
#include "engine/llama/llama_image_cache.h"

#include <gtest/gtest.h>

namespace mmirage::engine {
namespace {

TEST(ImageEmbeddingCacheTest, KeepsTheMostRecentlyUsedWithinTheBudget) {
  const float a[4] = {1, 2, 3, 4};
  ImageEmbeddingCache cache(8 * sizeof(float));  // room for two entries of 4 floats
  ASSERT_NE(cache.Insert("a", a, 4), nullptr);
  ASSERT_NE(cache.Insert("b", a, 4), nullptr);
  ASSERT_NE(cache.Find("a"), nullptr);  // a is now the most recent
  ASSERT_NE(cache.Insert("c", a, 4), nullptr);
  EXPECT_EQ(cache.Find("b"), nullptr) << "the least recently used entry goes first";
  ASSERT_NE(cache.Find("a"), nullptr);
  EXPECT_EQ((*cache.Find("a"))[3], 4.0f);
  EXPECT_NE(cache.Find("c"), nullptr);
  EXPECT_EQ(cache.used_bytes(), 8 * sizeof(float));
  const float big[9] = {};
  EXPECT_EQ(cache.Insert("big", big, 9), nullptr) << "larger than the whole budget: not kept";
  EXPECT_NE(cache.Find("a"), nullptr) << "and nothing evicted for it";
  ImageEmbeddingCache off(0);
  EXPECT_EQ(off.Insert("a", a, 4), nullptr);
  EXPECT_EQ(off.Find("a"), nullptr);
}

}  // namespace
}  // namespace mmirage::engine
