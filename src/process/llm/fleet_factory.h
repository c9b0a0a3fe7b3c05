// Fleets from the config (engine/fleet.h): `endpoint.base_urls` (existing servers) and `server_args.replicas`
// (managed servers, each pinned to its own CUDA_VISIBLE_DEVICES slice). The mappings are pure functions besides
// VisibleGpus (the environment, or `nvidia-smi -L`). Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "engine/fleet.h"
#include "engine/managed_server.h"
#include "engine/openai_engine.h"

namespace mmirage::process::llm {

// GPU ids this process may use: CUDA_VISIBLE_DEVICES's entries when set (empty when set to ""), else one per line
// of `nvidia-smi -L` ("0".."n-1"), else none.
std::vector<std::string> VisibleGpus(const config::VarLookup& vars);

// `gpus` cut into consecutive slices of per_slice ids, each a CUDA_VISIBLE_DEVICES value ("0,1"); a remainder
// shorter than per_slice is left out. REQUIRES: per_slice >= 1.
std::vector<std::string> GpuSlices(const std::vector<std::string>& gpus, size_t per_slice);

// One CUDA_VISIBLE_DEVICES value per managed replica: replicas (or, with "auto", visible GPUs / tp_size, at least
// 1), each the next tp_size GPUs; "" for every replica when no GPU is visible (not pinned).
// Errors: kInvalidArgument, located, when replicas × tp_size exceeds the visible GPUs.
Result<std::vector<std::string>> ReplicaGpuSlices(const config::Processor& processor,
                                                  const std::vector<std::string>& gpus);

// A replica's own engine does not retry (down after 10 s): the fleet moves a failed request elsewhere at once.
engine::OpenAiEngineOptions ReplicaEngineOptions(engine::OpenAiEngineOptions options);
// max_restarts from server_args, max_attempts from endpoint.max_retries (at least 1), the affinity from
// prefix_affinity.
engine::FleetOptions FleetOptionsFor(const config::Processor& processor);

// Whether the server at o.base_url answers: GET {base_url}/models (with the key) gets any response below 500.
// Errors: kUnavailable naming the URL.
Status ProbeEndpoint(const engine::OpenAiEngineOptions& o);

// A fleet over endpoint.base_urls, one OpenAI engine each (`base`, with the URL); a replica taken out is
// re-admitted (a fresh engine) once ProbeEndpoint succeeds again (an external replica, engine/fleet.h). Errors: those
// of CreateOpenAiEngine / CreateFleetEngine.
Result<std::unique_ptr<engine::Engine>> CreateUrlFleet(const config::Processor& processor,
                                                       const engine::OpenAiEngineOptions& base);

// The server of managed replica `index` pinned to `gpus` (a CUDA_VISIBLE_DEVICES value, "" = not pinned) on a
// fresh port; called again for each restart.
using ReplicaServer = std::function<Result<engine::ManagedServerOptions>(int index, const std::string& gpus)>;
// A fleet of slices.size() managed replicas (engine options `engine` each), loading at once; replicas that fail to
// start are left out (logged) while at least one starts. Errors: the first start error when none starts.
Result<std::unique_ptr<engine::Engine>> CreateManagedFleet(const config::Processor& processor,
                                                           const std::vector<std::string>& slices,
                                                           const ReplicaServer& server_for,
                                                           const engine::OpenAiEngineOptions& engine);

}  // namespace mmirage::process::llm
