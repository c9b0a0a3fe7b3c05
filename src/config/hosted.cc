// Hosted-API endpoint keys (contract: hosted.h).
#include "config/hosted.h"

namespace mmirage::config {
namespace {

void ReadPricing(MapReader& e, EndpointConfig* c) {
  YAML::Node pn = e.Get("pricing");
  if (!pn.IsDefined() || pn.IsNull()) return;
  Diag* d = e.diag();
  const std::string where = e.section() + ".pricing";
  if (!pn.IsMap()) {
    d->Error(pn, where + ": expected a map, got " + Describe(pn));
    return;
  }
  MapReader r(d, &e.vars(), pn, where);
  EndpointConfig::Pricing p;
  for (const char* key : {"input_per_million", "output_per_million"}) {
    if (!r.Has(key)) d->Error(pn, where + ": missing required key '" + key + "'");
  }
  if (r.Double("input_per_million", &p.input_per_million) && p.input_per_million < 0)
    d->Error(r.LocOf("input_per_million"), where + ".input_per_million must be >= 0");
  if (r.Double("output_per_million", &p.output_per_million) && p.output_per_million < 0)
    d->Error(r.LocOf("output_per_million"), where + ".output_per_million must be >= 0");
  if (r.OptDouble("cached_input_per_million", &p.cached_input_per_million) && p.cached_input_per_million &&
      *p.cached_input_per_million < 0)
    d->Error(r.LocOf("cached_input_per_million"), where + ".cached_input_per_million must be >= 0");
  r.Finish();
  c->pricing = p;
}

}  // namespace

void ReadHostedEndpointKeys(MapReader& e, EndpointConfig* c) {
  Diag* d = e.diag();
  const std::string where = e.section();
  YAML::Node mc = e.Get("max_concurrency");
  if (mc.IsDefined() && mc.IsScalar() && mc.Scalar() == "auto") {
    c->max_concurrency_auto = true;
  } else if (e.OptInt("max_concurrency", &c->max_concurrency) && c->max_concurrency && *c->max_concurrency < 1) {
    d->Error(e.LocOf("max_concurrency"), where + ".max_concurrency must be >= 1 or 'auto'");
  }
  e.String("system_prompt", &c->system_prompt);
  if (e.String("anthropic_version", &c->anthropic_version) && c->anthropic_version.empty())
    d->Error(e.LocOf("anthropic_version"), where + ".anthropic_version must not be empty");
  ReadPricing(e, c);
  YAML::Node rl = e.Get("rate_limits");
  if (!rl.IsDefined() || rl.IsNull()) return;
  if (!rl.IsMap()) {
    d->Error(rl, where + ".rate_limits: expected a map, got " + Describe(rl));
    return;
  }
  MapReader r(d, &e.vars(), rl, where + ".rate_limits");
  if (r.OptDouble("requests_per_minute", &c->requests_per_minute) && c->requests_per_minute &&
      *c->requests_per_minute <= 0)
    d->Error(r.LocOf("requests_per_minute"), where + ".rate_limits.requests_per_minute must be > 0");
  if (r.OptDouble("tokens_per_minute", &c->tokens_per_minute) && c->tokens_per_minute && *c->tokens_per_minute <= 0)
    d->Error(r.LocOf("tokens_per_minute"), where + ".rate_limits.tokens_per_minute must be > 0");
  r.Finish();
}

}  // namespace mmirage::config
