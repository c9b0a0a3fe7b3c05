// dlopen-based NVML access (util/nvml.h). The few NVML types are declared here with the ABI of nvml.h, so no
// CUDA headers are needed to build.
#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "util/nvml.h"
#include "util/parse_int.h"

namespace mmirage {
namespace {

using NvmlReturn = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
using NvmlDevice = void*;
struct NvmlUtilization {
  unsigned int gpu;     // percent
  unsigned int memory;  // percent
};

}  // namespace

struct NvmlLibrary::Rep {
  void* handle = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*by_index)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*by_uuid)(const char*, NvmlDevice*) = nullptr;  // optional
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
};

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Open() {
  auto rep = std::make_unique<Rep>();
  rep->handle = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (rep->handle == nullptr) {
    const char* e = ::dlerror();
    return Status::Unavailable(std::string("NVML not available: ") + (e ? e : "dlopen failed"));
  }
  auto sym = [&](const char* name) { return ::dlsym(rep->handle, name); };
  rep->init = reinterpret_cast<NvmlReturn (*)()>(sym("nvmlInit_v2"));
  rep->shutdown = reinterpret_cast<NvmlReturn (*)()>(sym("nvmlShutdown"));
  rep->by_index = reinterpret_cast<NvmlReturn (*)(unsigned int, NvmlDevice*)>(sym("nvmlDeviceGetHandleByIndex_v2"));
  rep->by_uuid = reinterpret_cast<NvmlReturn (*)(const char*, NvmlDevice*)>(sym("nvmlDeviceGetHandleByUUID"));
  rep->utilization =
      reinterpret_cast<NvmlReturn (*)(NvmlDevice, NvmlUtilization*)>(sym("nvmlDeviceGetUtilizationRates"));
  if (!rep->init || !rep->shutdown || !rep->by_index || !rep->utilization) {
    ::dlclose(rep->handle);
    return Status::Unavailable("NVML: libnvidia-ml.so.1 lacks a required symbol");
  }
  NvmlReturn rc = rep->init();
  if (rc != 0) {
    ::dlclose(rep->handle);
    return Status::Unavailable("NVML: nvmlInit_v2 failed with code " + std::to_string(rc));
  }
  return std::unique_ptr<NvmlLibrary>(new NvmlLibrary(std::move(rep)));
}

NvmlLibrary::NvmlLibrary(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}

NvmlLibrary::~NvmlLibrary() {
  rep_->shutdown();
  ::dlclose(rep_->handle);
}

std::optional<double> NvmlLibrary::GpuUtilization(const std::string& device) {
  NvmlDevice dev = nullptr;
  NvmlReturn rc;
  if (std::optional<uint64_t> index = ParseUint64(device)) {  // an index too large for NVML names no device
    rc = rep_->by_index(static_cast<unsigned int>(std::min<uint64_t>(*index, UINT_MAX)), &dev);
  } else if (rep_->by_uuid != nullptr) {
    rc = rep_->by_uuid(device.c_str(), &dev);
  } else {
    return std::nullopt;
  }
  if (rc != 0) return std::nullopt;
  NvmlUtilization u{};
  if (rep_->utilization(dev, &u) != 0) return std::nullopt;
  return static_cast<double>(u.gpu);
}

}  // namespace mmirage
