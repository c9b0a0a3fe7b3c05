#include "config/fleet.h"

namespace mmirage::config {

void ReadBaseUrls(MapReader& e, const std::string& section, EndpointConfig* out) {
  if (!e.Has("base_urls")) return;
  if (e.Has("base_url"))
    e.diag()->Error(e.LocOf("base_urls"), section + ".endpoint: give base_url or base_urls, not both");
  if (!e.StringList("base_urls", &out->base_urls)) return;
  if (out->base_urls.empty())
    e.diag()->Error(e.LocOf("base_urls"), section + ".endpoint.base_urls must name at least one URL");
  for (const auto& url : out->base_urls) {
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
      e.diag()->Error(e.LocOf("base_urls"),
                      section + ".endpoint.base_urls: '" + url + "' must start with http:// or https://");
  }
  if (!out->base_urls.empty()) out->base_url = out->base_urls[0];
}

void ReadReplicas(MapReader& s, LlmProcessor* out) {
  if (s.Has("replicas")) {
    YAML::Node n = s.Get("replicas");
    if (n.IsScalar() && n.Scalar() == "auto") {
      out->replicas_auto = true;
    } else if (s.Int("replicas", &out->replicas) && (out->replicas < 1 || out->replicas > 1024)) {
      s.diag()->Error(s.LocOf("replicas"), s.section() + ".replicas must be 'auto' or an integer in [1, 1024]");
    }
  }
  if (s.Int("max_restarts", &out->max_restarts) && out->max_restarts < 0)
    s.diag()->Error(s.LocOf("max_restarts"), s.section() + ".max_restarts must be >= 0");
  ReadPrefixAffinity(s, out);
}

void ReadPrefixAffinity(MapReader& m, LlmProcessor* out) {
  if (!m.Has("prefix_affinity")) return;
  const std::string key = m.section() + ".prefix_affinity";
  if (out->affinity_set)
    m.diag()->Error(m.LocOf("prefix_affinity"), key + ": give prefix_affinity in endpoint or server_args, not both");
  out->affinity_set = true;
  YAML::Node n = m.Get("prefix_affinity");
  if (n.IsScalar() && (n.Scalar() == "false" || n.Scalar() == "true")) {
    if (n.Scalar() == "false") out->affinity_prefix_chars = 0;
    return;
  }
  if (!n.IsMap()) {
    m.diag()->Error(m.LocOf("prefix_affinity"),
                    key + " must be false, true or a map {prefix_chars: N, max_imbalance: M}");
    return;
  }
  MapReader a(m.diag(), &m.vars(), n, key);
  if (a.Int("prefix_chars", &out->affinity_prefix_chars) &&
      (out->affinity_prefix_chars < 1 || out->affinity_prefix_chars > 1000000))
    a.diag()->Error(a.LocOf("prefix_chars"), key + ".prefix_chars must be an integer in [1, 1000000]");
  if (a.Int("max_imbalance", &out->affinity_max_imbalance) &&
      (out->affinity_max_imbalance < 0 || out->affinity_max_imbalance > 1000000))
    a.diag()->Error(a.LocOf("max_imbalance"), key + ".max_imbalance must be an integer in [0, 1000000]");
  a.Finish();
}

void ReadGpusPerWorker(MapReader& r, ExecutionParams* out) {
  if (r.Int("gpus_per_worker", &out->gpus_per_worker) && out->gpus_per_worker < 0)
    r.diag()->Error(r.LocOf("gpus_per_worker"), "gpus_per_worker must be >= 0");
}

}  // namespace mmirage::config
