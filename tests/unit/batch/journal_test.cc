#include "batch/journal.h"

#include <gtest/gtest.h>

#include "data/json.h"
#include "support/test_util.h"

namespace mmirage::batch {
namespace {

TEST(BatchJournalTest, EventsSurviveReopenAndATornLastLineIsDropped) {
  testing::TempDir d;
  {
    auto j = BatchJournal::Open(Env::Default(), d.path());
    ASSERT_TRUE(j.ok());
    JournalChunk c;
    c.name = "text-chunk-000001";
    c.chunk_id = "chunk-000001";
    c.modality = "text";
    c.requests.push_back(JournalRequest{"a-text-s0-d0p0-r7", 0, 0, 0, 7});
    ASSERT_TRUE((*j)->Append(c.ToEvent()).ok());
    Value e = Value::EmptyObject();
    e.Set("event", "submitted");
    e.Set("name", "text-chunk-000001");
    e.Set("batch_id", "batch_1");
    ASSERT_TRUE((*j)->Append(e).ok());
  }
  // A crash in the middle of the next append.
  std::string path = d.Path("journal.jsonl");
  std::string text = testing::ReadFile(path);
  testing::WriteFile(path, text + R"({"event":"sealed","sta)");
  auto j = BatchJournal::Open(Env::Default(), d.path());
  ASSERT_TRUE(j.ok()) << j.status().message();
  ASSERT_EQ((*j)->chunks().size(), 1u);
  EXPECT_EQ(*(*j)->chunks()[0].batch_id, "batch_1");
  EXPECT_EQ((*j)->chunks()[0].requests[0].row, 7u);
  EXPECT_FALSE((*j)->sealed(0));
  EXPECT_EQ(testing::ReadFile(path), text);  // truncated back to the last whole event
}

TEST(BatchJournalTest, CacheDecisionsAndStoredChunksSurviveReopen) {
  testing::TempDir d;
  {
    auto j = BatchJournal::Open(Env::Default(), d.path());
    ASSERT_TRUE(j.ok());
    JournalChunk c;
    c.name = "text-chunk-000001";
    c.requests.push_back(JournalRequest{"qa-text-s0-d0p0-r7", 0, 0, 2, 7});
    ASSERT_TRUE((*j)->Append(c.ToEvent()).ok());
    ASSERT_TRUE(
        (*j)->Append(*ParseJson(R"({"event":"cached","stage":1,"file":"cache-hits-stage-1.jsonl","hits":3})")).ok());
    ASSERT_TRUE((*j)->Append(*ParseJson(R"({"event":"stored","name":"text-chunk-000001"})")).ok());
    EXPECT_FALSE((*j)->Append(*ParseJson(R"({"event":"stored","name":"nope"})")).ok());
    EXPECT_FALSE((*j)->Append(*ParseJson(R"({"event":"cached","stage":2})")).ok());
  }
  auto j = BatchJournal::Open(Env::Default(), d.path());
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_TRUE((*j)->chunks()[0].stored);
  EXPECT_EQ((*j)->chunks()[0].requests[0].output, 2);
  EXPECT_EQ((*j)->chunks()[0].requests[0].row, 7u);
  ASSERT_EQ((*j)->cached_stages().size(), 1u);
  EXPECT_EQ((*j)->cached_stages().at(1), "cache-hits-stage-1.jsonl");
}

TEST(BatchJournalTest, ABadLineInTheMiddleIsCorruption) {
  testing::TempDir d;
  testing::WriteFile(d.Path("journal.jsonl"), "not json\n{\"event\":\"sealed\",\"stage\":0}\n");
  auto j = BatchJournal::Open(Env::Default(), d.path());
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("journal.jsonl:1:"), std::string::npos);
}

}  // namespace
}  // namespace mmirage::batch
