// Internal to config/: reading processing_params (templates and JMESPath compiled in place, with their YAML
// locations) and the cross-field checks run after every section is read. Errors and warnings go to the Diag,
// with their YAML locations. Thread-safety: no shared state; one Diag and Config per call.
#pragma once

#include <string>

#include "config/yaml_reader.h"

namespace mmirage::config {

// `yaml` is the source text, used to place template errors on the right line of block scalars.
void ReadProcessing(Diag* d, const VarLookup& vars, const std::string& yaml, const YAML::Node& node, Config* c);

// execution_params.ray (ray.cc). `vars` supplies RAY_API_SERVER_ADDRESS or RAY_ADDRESS when `address` is absent;
// an unusable one is an error at `mode_loc` when `ray_mode` (other modes never read it).
void ReadRay(Diag* d, const VarLookup& vars, const YAML::Node& node, bool ray_mode, const Loc& mode_loc,
             RayParams* ray);

// Checks that need several sections: processors for every output, computability of prompts, shard range,
// non-empty datasets. Appends errors/warnings to *d.
void ValidateConfig(Diag* d, Config* c);

}  // namespace mmirage::config
