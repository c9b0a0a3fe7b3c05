// Shared modules (util/module.h): found beside the executable (build/lib for the test binaries in build/tests),
// symbols resolved through the module and the libraries it links; a missing module is one clear error.
#include "util/module.h"

#include <gtest/gtest.h>

namespace mmirage {
namespace {

TEST(ModuleTest, AMissingModuleIsOneLineNamingItAndWhereItWasLookedFor) {
  auto m = LoadModule("libmmirage_no_such_module.so", "a test");
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(m.status().IsNotFound());
  const std::string msg = m.status().message();
  EXPECT_EQ(msg.rfind("cannot load libmmirage_no_such_module.so (a test): not found in /", 0), 0u) << msg;
  EXPECT_NE(msg.find("/lib, /"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(ModuleTest, TheCurlModuleLoadsOnceAndReachesLibcurlThroughIt) {
  auto a = LoadModule("libmmirage_curl.so", "HTTP client, libcurl");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = LoadModule("libmmirage_curl.so", "HTTP client, libcurl");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_NE(ModuleSymbol(*a, "mmirage_curl_module_v1"), nullptr);
  EXPECT_NE(ModuleSymbol(*a, "curl_easy_init"), nullptr);  // libcurl's own, a dependency of the module
  EXPECT_EQ(ModuleSymbol(*a, "no_such_symbol_anywhere"), nullptr);
  EXPECT_EQ(ModuleSymbol(nullptr, "curl_easy_init"), nullptr);
}

}  // namespace
}  // namespace mmirage
