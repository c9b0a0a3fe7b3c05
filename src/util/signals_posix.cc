#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "util/signals.h"

namespace mmirage {
namespace {

std::atomic<int> g_signal{0};

void OnSignal(int sig) {
  int expected = 0;
  if (!g_signal.compare_exchange_strong(expected, sig)) _exit(128 + sig);  // second signal: at once
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
}

bool StopRequested() { return g_signal.load(std::memory_order_relaxed) != 0; }
int StopSignal() { return g_signal.load(std::memory_order_relaxed); }
void TestRequestStop(int sig) { g_signal.store(sig); }

}  // namespace mmirage
