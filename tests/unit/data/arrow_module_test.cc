// The Arrow module (data/arrow_module.h) through util/module.h's LoadModuleApi: the table of this build loads, one
// from another build (another ABI or version) or a missing entry point is one clear error, never a call into it.
#include "data/arrow_module.h"

#include <gtest/gtest.h>

#include "util/module.h"

namespace mmirage {
namespace {

using arrow_module::Api;
using arrow_module::kAbi;

constexpr char kFile[] = "libmmirage_arrow.so";
constexpr char kEntry[] = "mmirage_arrow_module_v1";

TEST(ArrowModuleTest, TheTableOfThisBuildLoads) {
  auto api = LoadModuleApi<Api>(kFile, "a test", kEntry, kAbi, MMIRAGE_VERSION);
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  EXPECT_EQ((*api)->abi, kAbi);
  auto again = arrow_module::LoadArrowModule();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
}

TEST(ArrowModuleTest, AnotherBuildsTableIsRefusedWithOneLine) {
  const std::string want = "cannot load libmmirage_arrow.so (a test): it belongs to another build of mmirage";
  for (auto api : {LoadModuleApi<Api>(kFile, "a test", kEntry, kAbi + 1, MMIRAGE_VERSION),
                   LoadModuleApi<Api>(kFile, "a test", kEntry, kAbi, "0.0.0-another"),
                   LoadModuleApi<Api>(kFile, "a test", "mmirage_no_such_entry", kAbi, MMIRAGE_VERSION)}) {
    ASSERT_FALSE(api.ok());
    EXPECT_TRUE(api.status().IsNotFound());
    EXPECT_EQ(api.status().message().rfind(want, 0), 0u) << api.status().message();
  }
}

}  // namespace
}  // namespace mmirage
