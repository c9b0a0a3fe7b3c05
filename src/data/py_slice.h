// PySlice: Python's slice semantics (seq[start:stop:step]) computed without overflow, shared by the template
// engine and JMESPath (which specifies the same rules). A pure function; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace mmirage {

// The selected positions are first, first + step, ... (count of them), all in [0, length).
struct SliceIndices {
  int64_t first = 0;
  int64_t step = 1;
  size_t count = 0;
};

// The indices that seq[start:stop:step] selects from a sequence of `length` elements (absent bounds as in
// Python; any int64 bound or step, including INT64_MIN, is handled without overflow).
// REQUIRES: step != 0 (callers report "slice step cannot be zero" themselves), length >= 0.
SliceIndices PySliceIndices(int64_t length, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step);

}  // namespace mmirage
