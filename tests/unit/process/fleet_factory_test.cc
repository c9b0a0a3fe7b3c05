// Fleet mappings (process/llm/fleet_factory.h): visible GPUs, one CUDA_VISIBLE_DEVICES slice per replica.
#include "process/llm/fleet_factory.h"

#include <gtest/gtest.h>

#include "support/local_http_server.h"
#include "support/test_util.h"
#include "util/net.h"

namespace mmirage::process::llm {
namespace {

config::Processor Managed(int tp, int64_t replicas, bool auto_replicas = false) {
  config::Processor p;
  p.type = "llm";
  p.loc = {"c.yaml", 2, 3};
  p.llm.backend = "sglang";
  p.llm.tp_size = tp;
  p.llm.replicas = replicas;
  p.llm.replicas_auto = auto_replicas;
  return p;
}

config::VarLookup Cvd(const std::string& value) {
  return [value](const std::string& k) {
    return k == "CUDA_VISIBLE_DEVICES" ? std::optional<std::string>(value) : std::nullopt;
  };
}

TEST(FleetFactoryTest, VisibleGpusComeFromCudaVisibleDevices) {
  EXPECT_EQ(VisibleGpus(Cvd("0,1,4,5")), (std::vector<std::string>{"0", "1", "4", "5"}));
  EXPECT_EQ(VisibleGpus(Cvd("GPU-a1,GPU-b2")), (std::vector<std::string>{"GPU-a1", "GPU-b2"}));
  EXPECT_TRUE(VisibleGpus(Cvd("")).empty());
}

TEST(FleetFactoryTest, EachReplicaGetsTheNextTpSizeGpus) {
  std::vector<std::string> gpus = {"0", "1", "2", "3", "4", "5", "6", "7"};
  auto s = ReplicaGpuSlices(Managed(2, 1, true), gpus);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (std::vector<std::string>{"0,1", "2,3", "4,5", "6,7"}));
  s = ReplicaGpuSlices(Managed(1, 3), gpus);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (std::vector<std::string>{"0", "1", "2"}));
  s = ReplicaGpuSlices(Managed(3, 1, true), gpus);  // 8 / 3: 2 replicas, 2 GPUs idle
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (std::vector<std::string>{"0,1,2", "3,4,5"}));
}

TEST(FleetFactoryTest, WithoutGpusReplicasAreNotPinnedAndAutoIsOne) {
  auto s = ReplicaGpuSlices(Managed(1, 1, true), {});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, std::vector<std::string>{""});
  s = ReplicaGpuSlices(Managed(1, 3), {});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (std::vector<std::string>{"", "", ""}));
}

TEST(FleetFactoryTest, MoreGpusThanVisibleIsALocatedError) {
  auto s = ReplicaGpuSlices(Managed(2, 3), {"0", "1", "2", "3"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "c.yaml:2:3: server_args.replicas 3 × tp_size 2 needs 6 GPUs, 4 visible");
}

TEST(FleetFactoryTest, ReplicaEnginesGiveUpEarlyAndTheFleetRetriesElsewhere) {
  engine::OpenAiEngineOptions o;
  o.max_retries = 5;
  o.down_timeout_seconds = 120;
  engine::OpenAiEngineOptions r = ReplicaEngineOptions(o);
  EXPECT_EQ(r.max_retries, 0);
  EXPECT_DOUBLE_EQ(r.down_timeout_seconds, 10);
  config::Processor p = Managed(1, 2);
  p.llm.max_restarts = 7;
  EXPECT_EQ(FleetOptionsFor(p).max_restarts, 7);
  EXPECT_EQ(FleetOptionsFor(p).max_attempts, 5);
  EXPECT_EQ(FleetOptionsFor(p).affinity_prefix_chars, 256);
  EXPECT_EQ(FleetOptionsFor(p).affinity_slack, 2);
  p.llm.affinity_prefix_chars = 0;
  p.llm.affinity_max_imbalance = 7;
  EXPECT_EQ(FleetOptionsFor(p).affinity_prefix_chars, 0);
  EXPECT_EQ(FleetOptionsFor(p).affinity_slack, 7);
}

// A base_urls replica comes back once it answers GET {base_url}/models; a closed port does not answer.
TEST(FleetFactoryTest, ProbeEndpointAsksForTheModelsWithTheKey) {
  testing::TempDir d;
  testing::WriteFile(d.Path("root/v1/models"), "{\"data\":[]}");
  testing::LocalHttpServer server(d.Path("srv"), d.Path("root"));
  ASSERT_EQ(server.error(), "");
  engine::OpenAiEngineOptions o;
  o.base_url = server.Url("/v1/");
  o.api_key = "k-123";
  EXPECT_TRUE(ProbeEndpoint(o).ok()) << ProbeEndpoint(o).ToString();
  std::vector<std::string> reqs = server.Requests();
  ASSERT_FALSE(reqs.empty());
  EXPECT_NE(reqs[0].find("/v1/models"), std::string::npos) << reqs[0];
  EXPECT_NE(reqs[0].find("Bearer k-123"), std::string::npos) << reqs[0];
  auto port = FindFreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  o.base_url = "http://127.0.0.1:" + std::to_string(*port) + "/v1";
  Status s = ProbeEndpoint(o);
  EXPECT_TRUE(s.IsUnavailable()) << s.ToString();
  EXPECT_NE(s.message().find(o.base_url), std::string::npos) << s.message();
}

}  // namespace
}  // namespace mmirage::process::llm
