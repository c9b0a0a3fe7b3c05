// Internal to src/data/: small helpers shared by the Arrow readers and writers (includes Arrow headers; never
// include it from a header outside src/data/). Pure functions; thread-safe.
#pragma once

#include <arrow/status.h>

#include <string>

namespace mmirage {

// Arrow's message on one line (Arrow sometimes adds detail lines).
inline std::string ArrowMessage(const arrow::Status& st) {
  std::string m = st.message();
  for (char& c : m)
    if (c == '\n' || c == '\r') c = ' ';
  while (!m.empty() && m.back() == ' ') m.pop_back();
  return m;
}

}  // namespace mmirage
