#include "data/py_slice.h"

namespace mmirage {

SliceIndices PySliceIndices(int64_t length, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) {
  // Python's PySlice_AdjustIndices, in 128-bit arithmetic so that v + length and the stride never overflow.
  const __int128 n = length;
  auto adjust = [&](std::optional<int64_t> v, __int128 dflt) -> __int128 {
    if (!v) return dflt;
    __int128 x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  __int128 lo = adjust(start, step < 0 ? n - 1 : 0);
  __int128 hi = adjust(stop, step < 0 ? -1 : n);
  SliceIndices r;
  r.first = static_cast<int64_t>(lo);
  r.step = step;
  __int128 s = step;
  if (s > 0 && lo < hi) r.count = static_cast<size_t>((hi - lo - 1) / s + 1);
  if (s < 0 && lo > hi) r.count = static_cast<size_t>((lo - hi - 1) / -s + 1);
  return r;
}

}  // namespace mmirage
