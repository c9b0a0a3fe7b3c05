// Reading the fleet keys of an llm processor (loader.cc calls these inside the maps they belong to):
//   endpoint.base_urls: [url, ...]        several existing servers of one model (not with base_url)
//   server_args.replicas: N | auto        managed servers per shard ("auto": visible GPUs / tp_size)
//   server_args.max_restarts: K           restarts per replica of a fleet (default 3)
//   endpoint.prefix_affinity or server_args.prefix_affinity (one of them):
//     false | true | {prefix_chars: N >= 1 (256), max_imbalance: M >= 0 (2)}   rows sharing a prompt prefix
//     stay on one replica while it is at most M requests busier than the least loaded one (false: off)
// Errors are located diagnostics. Thread-compatible.
#pragma once

#include <string>

#include "config/config.h"
#include "config/yaml_reader.h"

namespace mmirage::config {

void ReadBaseUrls(MapReader& endpoint, const std::string& section, EndpointConfig* out);
void ReadReplicas(MapReader& server_args, LlmProcessor* out);  // prefix_affinity included
void ReadPrefixAffinity(MapReader& endpoint_or_server_args, LlmProcessor* out);
//   execution_params.gpus_per_worker: G   (local mode) each worker process pinned to its own G GPUs
void ReadGpusPerWorker(MapReader& execution_params, ExecutionParams* out);

}  // namespace mmirage::config
