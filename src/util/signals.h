// Stop requests from SIGINT/SIGTERM: the first signal asks the running shard to stop (StopRequested() turns
// true; the shard commits what is done and exits non-zero, resumable); a second signal exits at once with
// 128 + signal number (the last commit keeps the shard resumable). Thread-safe (lock-free atomics).
#pragma once

namespace mmirage {

void InstallStopSignalHandlers();
bool StopRequested();
// The signal that requested the stop (SIGINT, SIGTERM), 0 if none.
int StopSignal();
// Test hook: behaves as if `sig` had been received once.
void TestRequestStop(int sig);

}  // namespace mmirage
