// NVIDIA Management Library, loaded at run time with dlopen("libnvidia-ml.so.1") so that mmirage neither links
// nor requires it: on a machine without the driver, Open() fails and callers fall back to nvidia-smi or to
// "no GPU samples".
//
// Thread-safety: one NvmlLibrary is used by one thread at a time (the utilisation poller's). Ownership: the object
// owns the library handle and the NVML session; destruction calls nvmlShutdown and dlclose.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "util/status.h"

namespace mmirage {

class NvmlLibrary {
 public:
  // Loads the library and calls nvmlInit_v2. kUnavailable when the library or a symbol is missing or init fails
  // (the message says which).
  static Result<std::unique_ptr<NvmlLibrary>> Open();

  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;
  ~NvmlLibrary();

  // Utilisation (percent of time a kernel ran during the driver's last sample period) of one device. `device` is an
  // index ("0") or a UUID ("GPU-…", as CUDA_VISIBLE_DEVICES may list). nullopt when NVML reports an error.
  std::optional<double> GpuUtilization(const std::string& device);

 private:
  struct Rep;
  explicit NvmlLibrary(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace mmirage
