// Stop requests from SIGINT/SIGTERM/SIGHUP: the first signal asks the running shard to stop (StopRequested()
// turns true; the shard commits what is done and exits non-zero, resumable); a second signal exits at once with
// 128 + signal number (the last commit keeps the shard resumable) — after forwarding it to the registered child
// process groups (the workers of a local run), so that none of them outlives us. Thread-safe (lock-free atomics).
#pragma once

namespace mmirage {

void InstallStopSignalHandlers();
bool StopRequested();
// The signal that requested the stop (SIGINT, SIGTERM, SIGHUP), 0 if none.
int StopSignal();
// Its name ("SIGINT", "SIGTERM", "SIGHUP"; "signal N" otherwise).
const char* StopSignalName();
// Child process groups (by leader pid) that an immediate exit (second signal) signals first. At most 256 at a
// time; Register returns false when full. Unregister a group once its leader has been reaped.
bool RegisterStopGroup(int pgid);
void UnregisterStopGroup(int pgid);
// Test hooks: behave as if `sig` had been received once; withdraw that request (a test that stopped must not
// stop the tests after it in the same binary).
void TestRequestStop(int sig);
void TestClearStopRequest();

}  // namespace mmirage
