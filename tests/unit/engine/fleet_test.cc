// The fleet engine (engine/fleet.h) over hand-driven fake replicas: scheduling by least outstanding requests,
// failover (re-issue, take-out, restarts with backoff), exactly one answer per request. No threads, no sleeps:
// the test answers requests itself and runs the restart tasks the fleet hands out.
#include "engine/fleet.h"

#include <gtest/gtest.h>

#include <map>

namespace mmirage::engine {
namespace {

// Keeps what it is sent until the test answers it. Shutdown answers what is left with "engine shut down".
class ManualEngine : public Engine {
 public:
  struct Held {
    Request request;
    CompletionCallback done;
  };
  void Submit(Request request, CompletionCallback done) override {
    if (shut_down) return done(Error(Status::Unavailable("engine shut down")));
    held.push_back({std::move(request), std::move(done)});
  }
  int Capacity() const override { return 4; }
  double LoadSeconds() const override { return 1.5; }
  int NumGpus() const override { return 1; }
  void Shutdown() override {
    shut_down = true;
    std::vector<Held> left;
    left.swap(held);
    for (auto& h : left) h.done(Error(Status::Unavailable("engine shut down")));
  }
  // Answers the oldest held request: its prompt echoed (or `error`).
  void AnswerOldest(Status error = Status::OK()) {
    ASSERT_FALSE(held.empty());
    Held h = std::move(held.front());
    held.erase(held.begin());
    if (!error.ok()) return h.done(Error(error));
    Completion c;
    c.text = "echo:" + h.request.prompt;
    c.prompt_tokens = 3;
    c.completion_tokens = 2;
    h.done(c);
  }
  // Fails the oldest held request as a refused connection does (Completion::transport_failure).
  void RefuseOldest() {
    ASSERT_FALSE(held.empty());
    Held h = std::move(held.front());
    held.erase(held.begin());
    Completion c = Error(Status::Unavailable("cannot connect"));
    c.transport_failure = true;
    h.done(c);
  }
  static Completion Error(Status s) {
    Completion c;
    c.finish = FinishReason::kError;
    c.error = std::move(s);
    return c;
  }
  std::vector<Held> held;
  bool shut_down = false;
};

class FleetTest : public ::testing::Test {
 protected:
  // n replicas; those with restartable[i] get a restart function that makes a fresh ManualEngine (or fails while
  // restart_fails).
  void Make(int n, FleetOptions o = {}, std::vector<bool> restartable = {}, bool external = false) {
    std::vector<FleetReplica> reps;
    for (int i = 0; i < n; ++i) {
      auto e = std::make_unique<ManualEngine>();
      engines.push_back(e.get());
      FleetReplica r;
      r.name = "r" + std::to_string(i);
      r.engine = std::move(e);
      if (i < static_cast<int>(restartable.size()) && restartable[i]) {
        r.restart = [this, i]() -> Result<std::unique_ptr<Engine>> {
          ++restart_calls;
          if (restart_fails) return Status::Unavailable("cannot start");
          auto fresh = std::make_unique<ManualEngine>();
          engines[i] = fresh.get();
          return std::unique_ptr<Engine>(std::move(fresh));
        };
        r.external = external;
      }
      reps.push_back(std::move(r));
    }
    o.run_async = [this](std::function<void()> t) { tasks.push_back(std::move(t)); };
    o.sleep = [this](double s) {
      sleeps.push_back(s);
      if (fleet_sleep_hook) fleet_sleep_hook();
    };
    auto f = CreateFleetEngine(std::move(reps), o);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    fleet = std::move(*f);
  }
  void Send(const std::string& prompt) {
    Request r;
    r.prompt = prompt;
    fleet->Submit(r, [this, prompt](Completion c) {
      ++answers[prompt];
      results[prompt] = c.finish == FinishReason::kError ? "error:" + c.error.message() : c.text;
    });
  }
  // Shuts the fleet down while the maps its callbacks write to still exist.
  void TearDown() override {
    if (fleet) fleet->Shutdown();
  }
  void RunTasks() {
    std::vector<std::function<void()>> t;
    t.swap(tasks);
    for (auto& f : t) f();
  }
  std::vector<ManualEngine*> engines;
  std::unique_ptr<FleetEngine> fleet;
  std::vector<std::function<void()>> tasks;
  std::vector<double> sleeps;
  std::map<std::string, int> answers;
  std::map<std::string, std::string> results;
  int restart_calls = 0;
  bool restart_fails = false;
  std::function<void()> fleet_sleep_hook;  // runs after each backoff wait
};

TEST_F(FleetTest, RequestsGoToTheReplicaWithFewestOutstanding) {
  Make(3);
  EXPECT_EQ(fleet->Capacity(), 12);
  EXPECT_EQ(fleet->NumGpus(), 3);
  for (int i = 0; i < 6; ++i) Send("p" + std::to_string(i));
  for (auto* e : engines) EXPECT_EQ(e->held.size(), 2u);
  engines[2]->AnswerOldest();
  engines[2]->AnswerOldest();
  Send("a");
  Send("b");
  EXPECT_EQ(engines[2]->held.size(), 2u);
  EXPECT_EQ(engines[0]->held.size(), 2u);
  EXPECT_EQ(results["p2"], "echo:p2");
  auto stats = fleet->Stats();
  EXPECT_EQ(stats[2].requests, 2);
  EXPECT_EQ(stats[2].completion_tokens, 4);
  EXPECT_EQ(stats[0].requests, 0);
}

TEST_F(FleetTest, AFailedRequestGoesToAnotherReplicaAtOnce) {
  Make(2);
  Send("x");
  ASSERT_EQ(engines[0]->held.size(), 1u);
  engines[0]->AnswerOldest(Status::Unavailable("HTTP 503"));
  EXPECT_EQ(answers.count("x"), 0u);
  ASSERT_EQ(engines[1]->held.size(), 1u);
  engines[1]->AnswerOldest();
  EXPECT_EQ(answers["x"], 1);
  EXPECT_EQ(results["x"], "echo:x");
  EXPECT_EQ(fleet->Stats()[0].failures, 1);
  EXPECT_TRUE(fleet->Stats()[0].healthy);  // one failure does not take it out
}

TEST_F(FleetTest, ARequestFailingOnTwoReplicasCountsAgainstNeither) {
  FleetOptions o;
  o.fail_threshold = 2;
  Make(2, o);
  Send("x");                                                  // → r0
  engines[0]->AnswerOldest(Status::Unavailable("HTTP 500"));  // r0: 1 failure; x → r1
  engines[1]->AnswerOldest(Status::Unavailable("HTTP 500"));  // the same: the request is at fault, r0 back to 0
  Send("y");
  Send("z");
  ASSERT_EQ(engines[0]->held.size() + engines[1]->held.size(), 3u);  // x again, y, z
  while (!engines[0]->held.empty()) engines[0]->AnswerOldest(Status::Unavailable("HTTP 500"));
  auto stats = fleet->Stats();
  EXPECT_TRUE(stats[0].healthy) << "one failure of its own, one taken back";
  EXPECT_TRUE(stats[1].healthy);
  EXPECT_EQ(stats[0].failures + stats[1].failures, 2 + 2);
}

// Rows the model cannot answer (the same HTTP 500 on every replica) arriving faster than their re-issues answer:
// none of those failures counts, so no healthy replica is taken out.
TEST_F(FleetTest, RequestsFailingEverywhereNeverTakeAHealthyReplicaOut) {
  FleetOptions o;
  o.fail_threshold = 2;
  o.max_attempts = 2;
  Make(2, o);
  for (int i = 0; i < 6; ++i) Send("p" + std::to_string(i));
  const Status bad = Status::Unavailable("HTTP 500: output does not parse");
  for (ManualEngine* e : engines)
    for (size_t n = e->held.size(); n > 0; --n) e->AnswerOldest(bad);  // each moves to the other replica
  for (ManualEngine* e : engines)
    while (!e->held.empty()) e->AnswerOldest(bad);
  ASSERT_EQ(answers.size(), 6u);
  for (const auto& [prompt, n] : answers) EXPECT_EQ(results[prompt], "error:" + bad.message()) << prompt;
  EXPECT_TRUE(fleet->Stats()[0].healthy);
  EXPECT_TRUE(fleet->Stats()[1].healthy);
  EXPECT_EQ(fleet->Stats()[0].failures + fleet->Stats()[1].failures, 12);
}

TEST_F(FleetTest, AReplicaThatJustFailedIsPickedAfterTheOthers) {
  FleetOptions o;
  o.quarantine_seconds = 3600;
  Make(3, o);
  Send("x");                                                            // → r0
  engines[0]->AnswerOldest(Status::Unavailable("connection refused"));  // → r1
  for (int i = 0; i < 4; ++i) Send("p" + std::to_string(i));
  EXPECT_TRUE(engines[0]->held.empty()) << "the least loaded, but it has just failed";
  EXPECT_EQ(engines[1]->held.size() + engines[2]->held.size(), 5u);
  engines[1]->AnswerOldest();  // "x" answered elsewhere: r0's failure counts (1 of 3)
  for (int i = 0; i < 2; ++i) Send("q" + std::to_string(i));
  EXPECT_TRUE(engines[0]->held.empty());
  EXPECT_TRUE(fleet->Stats()[0].healthy);
}

TEST_F(FleetTest, ARequestEveryReplicaJustFailedWaitsForOneToAnswer) {
  FleetOptions o;
  o.quarantine_seconds = 3600;
  Make(2, o);
  Send("a");
  engines[0]->AnswerOldest(Status::Unavailable("refused r0"));
  engines[1]->AnswerOldest(Status::Unavailable("refused r1"));
  EXPECT_TRUE(engines[0]->held.empty() && engines[1]->held.empty()) << "not sent again at once";
  ASSERT_EQ(tasks.size(), 1u);  // a wake-up after the quarantine
  EXPECT_TRUE(answers.empty());
  Send("b");  // untried for b: sent
  ASSERT_EQ(engines[0]->held.size() + engines[1]->held.size(), 1u);
  ManualEngine* e = engines[0]->held.empty() ? engines[1] : engines[0];
  e->AnswerOldest();  // a replica answers: "a" goes to it
  ASSERT_EQ(e->held.size(), 1u);
  e->AnswerOldest();
  EXPECT_EQ(results["a"], "echo:a");
  RunTasks();  // the wake-up finds nothing left
  EXPECT_EQ(sleeps, std::vector<double>{3600});
  EXPECT_EQ(answers["a"], 1);
}

TEST_F(FleetTest, ADeadReplicaIsBlamedEvenForRequestsThatFailedElsewhereBefore) {
  FleetOptions o;
  o.fail_threshold = 2;
  o.max_attempts = 5;
  o.quarantine_seconds = 0;
  Make(3, o);
  Send("x");                                                  // → r0
  engines[0]->AnswerOldest(Status::Unavailable("HTTP 500"));  // → r1
  engines[1]->AnswerOldest(Status::Unavailable("refused r1"));
  Send("y");  // → r0 (x is on r2)
  Send("z");  // → r1, the least loaded
  ASSERT_EQ(engines[1]->held.size(), 1u);
  engines[1]->AnswerOldest(Status::Unavailable("refused r1"));
  EXPECT_TRUE(fleet->Stats()[1].healthy) << "not counted before the request is answered elsewhere";
  while (!engines[0]->held.empty()) engines[0]->AnswerOldest();
  while (!engines[2]->held.empty()) engines[2]->AnswerOldest();
  EXPECT_FALSE(fleet->Stats()[1].healthy);
  EXPECT_TRUE(fleet->Stats()[0].healthy);
}

// A refused connection is the replica's fault whatever the request: it counts at once, even for requests that then
// fail everywhere (a dead replica among rows the model cannot answer would otherwise never be taken out).
TEST_F(FleetTest, RefusedConnectionsCountAtOnce) {
  FleetOptions o;
  o.fail_threshold = 2;
  o.quarantine_seconds = 0;
  Make(3, o);
  Send("a");                   // → r0
  Send("b");                   // → r1
  Send("c");                   // → r2
  engines[1]->RefuseOldest();  // b moves on
  EXPECT_TRUE(fleet->Stats()[1].healthy);
  Send("d");  // → r1, the least loaded
  ASSERT_EQ(engines[1]->held.size(), 1u);
  engines[1]->RefuseOldest();
  EXPECT_FALSE(fleet->Stats()[1].healthy) << "two refusals in a row, nothing answered yet";
  for (int round = 0; round < 10 && answers.size() < 4; ++round)  // re-issues go to the other healthy replica
    for (ManualEngine* e : {engines[0], engines[2]})
      while (!e->held.empty()) e->AnswerOldest(Status::Unavailable("HTTP 500: the row's own"));
  ASSERT_EQ(answers.size(), 4u);
  for (const auto& [prompt, n] : answers) EXPECT_EQ(n, 1) << prompt;
}

TEST_F(FleetTest, InvalidRequestsAreAnsweredNotRetried) {
  Make(2);
  Send("bad");
  engines[0]->AnswerOldest(Status::InvalidArgument("prompt too long"));
  EXPECT_EQ(results["bad"], "error:prompt too long");
  EXPECT_TRUE(engines[1]->held.empty());
}

TEST_F(FleetTest, ADeadReplicasInFlightRequestsMoveAtOnceAndLateAnswersAreDropped) {
  FleetOptions o;
  o.fail_threshold = 1;
  Make(3, o);
  for (int i = 0; i < 9; ++i) Send("p" + std::to_string(i));
  ASSERT_EQ(engines[1]->held.size(), 3u);
  engines[1]->AnswerOldest(Status::Unavailable("connection refused"));  // that request moves
  EXPECT_EQ(engines[0]->held.size() + engines[2]->held.size(), 7u);
  EXPECT_TRUE(fleet->Stats()[1].healthy);
  // Answered elsewhere: r1's failure counts, it is taken out and its other 2 requests move at once.
  for (ManualEngine* e : {engines[0], engines[2]})
    for (size_t n = e->held.size(); n > 0; --n) e->AnswerOldest();
  EXPECT_EQ(engines[0]->held.size() + engines[2]->held.size(), 2u);
  EXPECT_FALSE(fleet->Stats()[1].healthy);
  engines[1]->AnswerOldest();  // a late answer from the dead replica: dropped
  engines[1]->AnswerOldest();
  RunTasks();  // no restart function: the engine is shut down
  EXPECT_TRUE(engines[1]->shut_down);
  while (!engines[0]->held.empty()) engines[0]->AnswerOldest();
  while (!engines[2]->held.empty()) engines[2]->AnswerOldest();
  ASSERT_EQ(answers.size(), 9u);
  for (const auto& [prompt, n] : answers) {
    EXPECT_EQ(n, 1) << prompt;
    EXPECT_EQ(results[prompt], "echo:" + prompt);
  }
  EXPECT_EQ(fleet->Stats()[1].requests, 0);
}

TEST_F(FleetTest, ATakenOutReplicaIsRestartedWithBackoffAndTakesRequestsAgain) {
  FleetOptions o;
  o.fail_threshold = 1;
  o.restart_backoff_seconds = 0.5;
  Make(2, o, {true, false});
  Send("a");
  engines[0]->AnswerOldest(Status::Unavailable("HTTP 500"));  // "a" moves to r1
  ASSERT_EQ(engines[1]->held.size(), 1u);
  engines[1]->AnswerOldest();  // answered elsewhere: r0's failure counts, it is taken out
  ManualEngine* old = engines[0];
  RunTasks();
  EXPECT_TRUE(old->shut_down);
  EXPECT_EQ(restart_calls, 1);
  EXPECT_EQ(sleeps, std::vector<double>{0.5});
  auto stats = fleet->Stats();
  EXPECT_TRUE(stats[0].healthy);
  EXPECT_EQ(stats[0].restarts, 1);
  Send("b");  // r0 (fresh, empty) has fewer outstanding than r1
  ASSERT_EQ(engines[0]->held.size(), 1u);
  engines[0]->AnswerOldest();
  EXPECT_EQ(results["b"], "echo:b");
}

TEST_F(FleetTest, RequestsWaitWhileTheOnlyReplicaRestartsAndFailWhenRestartsRunOut) {
  FleetOptions o;
  o.fail_threshold = 1;
  o.max_restarts = 3;
  o.quarantine_seconds = 0;
  Make(1, o, {true});
  Send("a");
  engines[0]->AnswerOldest(Status::Unavailable("connection refused"));
  engines[0]->AnswerOldest(Status::Unavailable("connection refused"));  // on the same replica again: counted
  Send("b");
  EXPECT_TRUE(answers.empty()) << "waiting for the restart";
  restart_fails = true;
  RunTasks();
  EXPECT_EQ(restart_calls, 3);
  EXPECT_EQ(sleeps, (std::vector<double>{1, 2, 4}));
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(results["a"].rfind("error:every replica of the fleet is down", 0), 0u) << results["a"];
  EXPECT_EQ(answers["b"], 1);
  Send("c");
  EXPECT_EQ(results["c"].rfind("error:every replica of the fleet is down", 0), 0u);
}

TEST_F(FleetTest, AnExternalReplicaIsProbedUntilItAnswers) {
  FleetOptions o;
  o.fail_threshold = 1;
  o.max_restarts = 1;
  o.probe_interval_seconds = 0.25;
  Make(2, o, {true, false}, /*external=*/true);
  Send("a");
  engines[0]->AnswerOldest(Status::Unavailable("connection refused"));  // "a" moves to r1
  engines[1]->AnswerOldest();                                           // and answers: r0 is taken out
  restart_fails = true;
  fleet_sleep_hook = [this] {  // it answers on the sixth try
    if (sleeps.size() == 6) restart_fails = false;
  };
  RunTasks();
  EXPECT_EQ(restart_calls, 6) << "max_restarts does not bound an external replica";
  EXPECT_EQ(sleeps, (std::vector<double>(6, 0.25)));
  auto stats = fleet->Stats();
  EXPECT_TRUE(stats[0].healthy);
  EXPECT_EQ(stats[0].restarts, 1) << "failed tries are not restarts";
  auto events = fleet->TakeEvents();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].change, "out");
  EXPECT_EQ(events[1].change, "back");
  EXPECT_EQ(events[1].name, "r0");
  EXPECT_GT(events[1].t, 1e9);
  EXPECT_TRUE(fleet->TakeEvents().empty());
}

TEST_F(FleetTest, RestartAndGiveUpAreEvents) {
  FleetOptions o;
  o.fail_threshold = 1;
  o.max_restarts = 1;
  Make(2, o, {true, false});
  Send("a");
  engines[0]->AnswerOldest(Status::Unavailable("HTTP 500"));
  engines[1]->AnswerOldest();
  RunTasks();  // restarted
  Send("b");
  Send("c");
  ASSERT_FALSE(engines[0]->held.empty());
  engines[0]->AnswerOldest(Status::Unavailable("HTTP 503"));
  while (!engines[1]->held.empty()) engines[1]->AnswerOldest();  // out again: no restart left
  RunTasks();
  std::vector<std::string> changes;
  for (const auto& e : fleet->TakeEvents()) changes.push_back(e.change);
  EXPECT_EQ(changes, (std::vector<std::string>{"out", "restarted", "out", "gave_up"}));
}

TEST_F(FleetTest, WaitingRequestsRunOnTheRestartedReplica) {
  FleetOptions o;
  o.fail_threshold = 1;
  o.quarantine_seconds = 0;
  Make(1, o, {true});
  Send("a");
  engines[0]->AnswerOldest(Status::Unavailable("connection refused"));
  engines[0]->AnswerOldest(Status::Unavailable("connection refused"));
  RunTasks();
  ASSERT_EQ(engines[0]->held.size(), 1u);
  engines[0]->AnswerOldest();
  EXPECT_EQ(results["a"], "echo:a");
  EXPECT_EQ(fleet->Stats()[0].restarts, 1);
}

TEST_F(FleetTest, ARequestIsSentToAtMostMaxAttemptsReplicas) {
  FleetOptions o;
  o.fail_threshold = 100;
  o.max_attempts = 2;
  Make(3, o);
  Send("x");
  engines[0]->AnswerOldest(Status::Unavailable("HTTP 500"));
  engines[1]->AnswerOldest(Status::Unavailable("HTTP 500 again"));
  EXPECT_EQ(results["x"], "error:HTTP 500 again");
  EXPECT_TRUE(engines[2]->held.empty());
}

TEST_F(FleetTest, ShutdownAnswersEveryPendingRequestOnce) {
  Make(2);
  Send("a");
  Send("b");
  fleet->Shutdown();
  EXPECT_EQ(answers["a"], 1);
  EXPECT_EQ(answers["b"], 1);
  EXPECT_EQ(results["a"], "error:engine shut down");
  Send("c");
  EXPECT_EQ(results["c"], "error:engine shut down");
  fleet->Shutdown();  // idempotent
  EXPECT_EQ(answers["a"], 1);
}

TEST(FleetCreateTest, RejectsAnEmptyFleet) { EXPECT_FALSE(CreateFleetEngine({}, {}).ok()); }

// Prefix affinity: 8-character keys, slack 2. "shared:" prompts share a key; "other-1 " is another.
FleetOptions AffinityOptions() {
  FleetOptions o;
  o.affinity_prefix_chars = 8;
  o.affinity_slack = 2;
  return o;
}

TEST_F(FleetTest, RowsSharingAPrefixStayOnTheirReplicaWhileWithinTheSlack) {
  Make(2, AffinityOptions());
  Send("shared: row 1");  // → r0 (round robin start)
  Send("shared: row 2");  // r0 has 1 outstanding, r1 0: within the slack, stays on r0
  Send("shared: row 3");  // 2 vs 0: still within
  EXPECT_EQ(engines[0]->held.size(), 3u);
  EXPECT_EQ(engines[1]->held.size(), 0u);
  Send("shared: row 4");  // 3 vs 0 exceeds the slack: the least loaded takes it, and the prefix with it
  EXPECT_EQ(engines[1]->held.size(), 1u);
  Send("shared: row 5");  // the prefix was last sent to r1
  EXPECT_EQ(engines[1]->held.size(), 2u);
  Send("other-1 x");  // a new prefix: least outstanding (r1 2 vs r0 3)
  EXPECT_EQ(engines[1]->held.size(), 3u);
  EXPECT_EQ(engines[1]->held.back().request.prompt, "other-1 x");
  engines[0]->AnswerOldest();
  engines[0]->AnswerOldest();
  engines[0]->AnswerOldest();
  Send("other-1 y");  // its prefix is on r1 (3 outstanding) and r0 has 0: beyond the slack, r0
  EXPECT_EQ(engines[0]->held.size(), 1u);
  EXPECT_EQ(results["shared: row 1"], "echo:shared: row 1");
}

TEST_F(FleetTest, WithoutAffinityRowsSharingAPrefixAreSpreadEvenly) {
  FleetOptions o = AffinityOptions();
  o.affinity_prefix_chars = 0;
  Make(2, o);
  for (int i = 0; i < 4; ++i) Send("shared: row " + std::to_string(i));
  EXPECT_EQ(engines[0]->held.size(), 2u);
  EXPECT_EQ(engines[1]->held.size(), 2u);
}

TEST_F(FleetTest, AffinityNeitherHoldsAReissueNorPointsAtATakenOutReplica) {
  FleetOptions o = AffinityOptions();
  o.fail_threshold = 1;
  Make(3, o);
  Send("shared: a");                                          // → r0
  engines[0]->AnswerOldest(Status::Unavailable("HTTP 503"));  // the re-issue goes to an untried replica
  EXPECT_EQ(engines[0]->held.size(), 0u);
  ASSERT_EQ(engines[1]->held.size() + engines[2]->held.size(), 1u);
  int affine = engines[1]->held.empty() ? 2 : 1;
  Send("shared: b");  // follows the prefix to where it went last
  EXPECT_EQ(engines[affine]->held.size(), 2u);
  engines[affine]->AnswerOldest();  // "a" answered there: r0's failure counts, r0 is out
  EXPECT_FALSE(fleet->Stats()[0].healthy);
  Send("shared: c");
  EXPECT_EQ(engines[affine]->held.size(), 2u);
  engines[affine]->AnswerOldest(Status::Unavailable("connection refused"));  // "b" moves to the other
  engines[3 - affine]->AnswerOldest();  // and answers: `affine` is out, "c" moves too
  Send("shared: d");
  EXPECT_EQ(engines[3 - affine]->held.size(), 2u);  // c and d: the only healthy replica left
  EXPECT_FALSE(fleet->Stats()[affine].healthy);
}

TEST_F(FleetTest, NegativeAffinityOptionsAreRejected) {
  FleetOptions o;
  o.affinity_slack = -1;
  std::vector<FleetReplica> reps(1);
  reps[0].engine = std::make_unique<ManualEngine>();
  auto f = CreateFleetEngine(std::move(reps), o);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("affinity_slack"), std::string::npos);
}

}  // namespace
}  // namespace mmirage::engine
