#include "pipeline/row_batches.h"

#include <gtest/gtest.h>

namespace mmirage::pipeline {
namespace {

TEST(UsageLineTest, KeysInTheirFixedOrder) {
  // usage.jsonl is read by the run report and by users: its bytes must not drift.
  EXPECT_EQ(UsageLine(7, RowUsage{12, 3, 2, 1}),
            "{\"row_index\":7,\"prompt_tokens\":12,\"completion_tokens\":3,\"generations\":2,"
            "\"cached_generations\":1}\n");
  EXPECT_EQ(UsageLine(0, RowUsage{}),
            "{\"row_index\":0,\"prompt_tokens\":0,\"completion_tokens\":0,\"generations\":0,"
            "\"cached_generations\":0}\n");
}

}  // namespace
}  // namespace mmirage::pipeline
