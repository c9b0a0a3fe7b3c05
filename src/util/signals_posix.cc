#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "util/signals.h"

namespace mmirage {
namespace {

std::atomic<int> g_signal{0};
constexpr int kMaxGroups = 256;
std::atomic<int> g_groups[kMaxGroups];  // 0 = free slot

void OnSignal(int sig) {
  int expected = 0;
  if (!g_signal.compare_exchange_strong(expected, sig)) {
    // Second signal: at once, but not without the workers (they are in their own process groups, so the
    // terminal's signal did not reach them): they get it too and exit at once themselves.
    for (auto& g : g_groups) {
      int pgid = g.load(std::memory_order_relaxed);
      if (pgid > 0) ::kill(-pgid, sig);
    }
    _exit(128 + sig);
  }
  static const char kMsg[] = "\nmmirage: stopping after the rows in flight (send the signal again to exit now)\n";
  ssize_t ignored = ::write(2, kMsg, sizeof kMsg - 1);
  (void)ignored;
}

}  // namespace

void InstallStopSignalHandlers() {
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGHUP, &sa, nullptr);  // a closed terminal: stop as for Ctrl-C
}

const char* StopSignalName() {
  switch (StopSignal()) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

bool RegisterStopGroup(int pgid) {
  for (auto& g : g_groups) {
    int expected = 0;
    if (g.compare_exchange_strong(expected, pgid)) return true;
  }
  return false;
}

void UnregisterStopGroup(int pgid) {
  for (auto& g : g_groups) {
    int expected = pgid;
    if (g.compare_exchange_strong(expected, 0)) return;
  }
}

bool StopRequested() { return g_signal.load(std::memory_order_relaxed) != 0; }
int StopSignal() { return g_signal.load(std::memory_order_relaxed); }
void TestRequestStop(int sig) { g_signal.store(sig); }

void TestClearStopRequest() { g_signal.store(0); }

}  // namespace mmirage
