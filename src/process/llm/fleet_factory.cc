#include "process/llm/fleet_factory.h"

#include <algorithm>

#include "util/http/event_loop.h"
#include "util/log.h"
#include "util/process/subprocess.h"

namespace mmirage::process::llm {

std::vector<std::string> VisibleGpus(const config::VarLookup& vars) {
  config::VarLookup lookup = vars ? vars : config::ProcessVarLookup();
  std::vector<std::string> gpus;
  if (std::optional<std::string> cvd = lookup("CUDA_VISIBLE_DEVICES")) {
    size_t at = 0;
    while (at <= cvd->size()) {
      size_t comma = cvd->find(',', at);
      if (comma == std::string::npos) comma = cvd->size();
      std::string id = cvd->substr(at, comma - at);
      if (!id.empty()) gpus.push_back(id);
      at = comma + 1;
    }
    return gpus;
  }
  auto smi = RunCommandCapture({"nvidia-smi", "-L"}, 30);
  if (!smi.ok() || smi->exit_code != 0) return gpus;
  int n = 0;
  for (size_t at = 0; at < smi->out.size(); ++at)
    if (smi->out.compare(at, 4, "GPU ") == 0 && (at == 0 || smi->out[at - 1] == '\n'))
      gpus.push_back(std::to_string(n++));
  return gpus;
}

Result<std::vector<std::string>> ReplicaGpuSlices(const config::Processor& p, const std::vector<std::string>& gpus) {
  const config::LlmProcessor& llm = p.llm;
  size_t tp = static_cast<size_t>(std::max(1, llm.tp_size));
  size_t n = llm.replicas_auto ? std::max<size_t>(1, gpus.size() / tp) : static_cast<size_t>(llm.replicas);
  if (gpus.empty()) return std::vector<std::string>(n, "");
  if (n * tp > gpus.size()) {
    return Status::InvalidArgument(p.loc.ToString() + ": server_args.replicas " + std::to_string(n) + " × tp_size " +
                                   std::to_string(tp) + " needs " + std::to_string(n * tp) + " GPUs, " +
                                   std::to_string(gpus.size()) + " visible");
  }
  std::vector<std::string> slices = GpuSlices(gpus, tp);
  slices.resize(n);
  return slices;
}

std::vector<std::string> GpuSlices(const std::vector<std::string>& gpus, size_t per_slice) {
  std::vector<std::string> slices;
  for (size_t i = 0; (i + 1) * per_slice <= gpus.size(); ++i) {
    std::string s;
    for (size_t g = i * per_slice; g < (i + 1) * per_slice; ++g) s += (s.empty() ? "" : ",") + gpus[g];
    slices.push_back(s);
  }
  return slices;
}

engine::OpenAiEngineOptions ReplicaEngineOptions(engine::OpenAiEngineOptions o) {
  o.max_retries = 0;
  o.down_timeout_seconds = std::min(o.down_timeout_seconds, 10.0);
  o.backoff_max_seconds = std::min(o.backoff_max_seconds, 2.0);
  return o;
}

engine::FleetOptions FleetOptionsFor(const config::Processor& p) {
  engine::FleetOptions f;
  f.max_restarts = static_cast<int>(p.llm.max_restarts);
  int64_t retries = p.llm.endpoint ? p.llm.endpoint->max_retries : 5;
  f.max_attempts = static_cast<int>(std::clamp<int64_t>(retries, 1, 100));
  f.affinity_prefix_chars = static_cast<int>(p.llm.affinity_prefix_chars);
  f.affinity_slack = static_cast<int>(p.llm.affinity_max_imbalance);
  return f;
}

Status ProbeEndpoint(const engine::OpenAiEngineOptions& o) {
  HttpRequest r;
  r.method = "GET";
  std::string base = o.base_url;
  if (!base.empty() && base.back() == '/') base.pop_back();
  r.url = base + "/models";
  r.timeout_seconds = 5;
  if (!o.api_key.empty())
    r.headers.push_back(o.api == engine::HttpApi::kAnthropic ? "x-api-key: " + o.api_key
                                                             : "Authorization: Bearer " + o.api_key);
  HttpResponse resp = HttpFetch(r);
  if (resp.transport != HttpTransport::kOk) return Status::Unavailable(o.base_url + ": " + resp.error);
  if (resp.status_code >= 500) return Status::Unavailable(o.base_url + ": HTTP " + std::to_string(resp.status_code));
  return Status::OK();
}

Result<std::unique_ptr<engine::Engine>> CreateUrlFleet(const config::Processor& p,
                                                       const engine::OpenAiEngineOptions& base) {
  std::vector<engine::FleetReplica> replicas;
  for (const auto& url : p.llm.endpoint->base_urls) {
    engine::OpenAiEngineOptions o = ReplicaEngineOptions(base);
    o.base_url = url;
    auto e = engine::CreateOpenAiEngine(o);
    if (!e.ok()) return e.status().WithContext(p.loc.ToString() + ": endpoint " + url);
    engine::FleetReplica r;
    r.name = url;
    r.engine = std::move(*e);
    r.restart = [o]() -> Result<std::unique_ptr<engine::Engine>> {
      MMIRAGE_TRY(ProbeEndpoint(o));
      return engine::CreateOpenAiEngine(o);
    };
    r.external = true;
    replicas.push_back(std::move(r));
  }
  auto fleet = engine::CreateFleetEngine(std::move(replicas), FleetOptionsFor(p));
  if (!fleet.ok()) return fleet.status();
  return std::unique_ptr<engine::Engine>(std::move(*fleet));
}

Result<std::unique_ptr<engine::Engine>> CreateManagedFleet(const config::Processor& p,
                                                           const std::vector<std::string>& slices,
                                                           const ReplicaServer& server_for,
                                                           const engine::OpenAiEngineOptions& eo) {
  std::vector<engine::ManagedServerOptions> servers;
  for (size_t i = 0; i < slices.size(); ++i) {
    // Every port is picked before any server listens: a port picked twice is picked again.
    for (int tries = 0;; ++tries) {
      MMIRAGE_ASSIGN_OR_RETURN(engine::ManagedServerOptions so, server_for(static_cast<int>(i), slices[i]));
      bool taken = std::any_of(servers.begin(), servers.end(), [&](const auto& o) { return o.port == so.port; });
      if (!taken || tries == 10) {
        servers.push_back(std::move(so));
        break;
      }
    }
  }
  auto started = engine::CreateManagedServerEngines(servers, eo);
  std::vector<engine::FleetReplica> replicas;
  Status first_error;
  for (size_t i = 0; i < started.size(); ++i) {
    if (!started[i].ok()) {
      LOG_WARN("replica " << i << " of " << slices.size() << " did not start: " << started[i].status().message());
      if (first_error.ok()) first_error = started[i].status().WithContext(p.loc.ToString() + ": processor 'llm'");
      continue;
    }
    int index = static_cast<int>(i);
    std::string gpus = slices[i];
    engine::FleetReplica r;
    r.name = "replica " + std::to_string(i) + (gpus.empty() ? "" : " (GPUs " + gpus + ")");
    r.engine = std::move(*started[i]);
    r.restart = [server_for, index, gpus, eo]() -> Result<std::unique_ptr<engine::Engine>> {
      MMIRAGE_ASSIGN_OR_RETURN(engine::ManagedServerOptions so, server_for(index, gpus));
      return engine::CreateManagedServerEngine(so, eo);
    };
    replicas.push_back(std::move(r));
  }
  if (replicas.empty()) return first_error;
  LOG_INFO("fleet of " << replicas.size() << " " << p.llm.backend << " replica(s)");
  auto fleet = engine::CreateFleetEngine(std::move(replicas), FleetOptionsFor(p));
  if (!fleet.ok()) return fleet.status();
  return std::unique_ptr<engine::Engine>(std::move(*fleet));
}

}  // namespace mmirage::process::llm
