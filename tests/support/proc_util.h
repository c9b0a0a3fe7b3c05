// Test helpers about processes, read from /proc: the live members of a process group, and polling a condition
// with a deadline. Thread-safe; no state.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

namespace mmirage::testing {

// Pids of the processes of group `pgid` that are alive (zombies, which have exited, are left out).
std::vector<int> LiveGroupMembers(int pgid);

// True as soon as `done()` is; false when it is still false after `seconds` (polled every 20 ms).
bool WaitFor(const std::function<bool()>& done, double seconds);

}  // namespace mmirage::testing
