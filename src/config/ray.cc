// execution_params.ray: the Ray Jobs API address and the resources of each shard task (docs/ray.md).
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>

#include "config/validate.h"
#include "data/json.h"

namespace mmirage::config {
namespace {

// "17179869184", "16GiB", "16G", "512MiB", "2.5GB" → bytes; -1 when malformed. K/M/G/T are powers of 1024.
int64_t ParseMemory(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return -1;
  double number = 0;
  try {
    number = std::stod(text.substr(0, i));
  } catch (const std::exception&) { return -1; }
  std::string unit = text.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  for (auto [u, s] : {std::pair{"K", 1024.0},
                      {"M", 1024.0 * 1024},
                      {"G", 1024.0 * 1024 * 1024},
                      {"T", 1024.0 * 1024 * 1024 * 1024}}) {
    if (unit == u || unit == std::string(u) + "B" || unit == std::string(u) + "IB") scale = s;
  }
  if (scale == 0 || !(number * scale < 9e18)) return -1;
  return static_cast<int64_t>(number * scale);
}

bool IsHttpUrl(const std::string& s) {
  return (s.rfind("http://", 0) == 0 && s.size() > 7) || (s.rfind("https://", 0) == 0 && s.size() > 8);
}

// "head", "head:6379", "10.0.0.1:10001", "[::1]:10001" → the host as a URL writes it ("[::1]"); "" when malformed.
std::string HostOf(std::string hostport) {
  while (!hostport.empty() && hostport.back() == '/') hostport.pop_back();
  std::string host = hostport, port;
  if (!hostport.empty() && hostport[0] == '[') {
    size_t close = hostport.find(']');
    if (close == std::string::npos || close == 1) return "";
    host = hostport.substr(0, close + 1);
    if (close + 1 < hostport.size()) {
      if (hostport[close + 1] != ':') return "";
      port = hostport.substr(close + 2);
      if (port.empty()) return "";
    }
  } else if (size_t colon = hostport.find(':'); colon != std::string::npos) {
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
    if (port.empty()) return "";
  }
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return "";
  if (host.empty() || (host[0] != '[' && host.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                                "0123456789.-_") != std::string::npos))
    return "";
  return host;
}

// The Jobs API URL of a Ray address, as Ray's own job client finds it (docs/ray.md): an http(s) URL is the API;
// ray://host:port (a Ray Client address), host:port (the head's GCS address) and auto (the head on this machine)
// name the head, whose dashboard serves the API on `dashboard_port` (Ray's client asks the cluster for that URL
// through Ray's Python, which the submitting side does not have). "" with *why for a form mmirage cannot use.
std::string RayJobsApiUrl(const std::string& address, int64_t dashboard_port, std::string* why) {
  std::string port = ":" + std::to_string(dashboard_port);
  if (IsHttpUrl(address)) {
    std::string url = address;
    while (url.size() > 8 && url.back() == '/') url.pop_back();
    return url;
  }
  if (address == "auto") return "http://127.0.0.1" + port;
  if (address == "local") {
    *why = "'local' starts a new Ray instance; mmirage submits to a running cluster";
    return "";
  }
  size_t scheme = address.find("://");
  if (scheme != std::string::npos && address.compare(0, scheme, "ray") != 0) {
    *why = "the scheme '" + address.substr(0, scheme) + "://' is not one mmirage submits through";
    return "";
  }
  std::string host = HostOf(scheme == std::string::npos ? address : address.substr(scheme + 3));
  if (host.empty()) {
    *why = "'" + address + "' is not a host or host:port";
    return "";
  }
  return "http://" + host + port;
}

constexpr char kAddressForms[] =
    " (use http(s)://host:8265 for the dashboard, ray://head:10001, head:6379 or auto; docs/ray.md)";

// The `address` and `dashboard_port` keys as read (absent when the `ray:` block is).
struct AddressKeys {
  std::optional<std::string> address;
  Loc address_loc;
  bool port_given = false;
  Loc port_loc;
};

void ReadAddressKeys(Diag* d, MapReader* r, AddressKeys* k, RayParams* ray) {
  r->OptString("address", &k->address);
  std::optional<int64_t> port;
  if (r->OptInt("dashboard_port", &port) && port) {
    if (*port < 1 || *port > 65535)
      d->Error(r->LocOf("dashboard_port"), "execution_params.ray.dashboard_port must be a port, 1 to 65535");
    else ray->dashboard_port = *port;
  }
  k->port_given = port.has_value();
  k->port_loc = r->LocOf("dashboard_port");
  k->address_loc = r->LocOf("address");
}

// ray->address from the key, else $RAY_API_SERVER_ADDRESS (ray mode), $RAY_ADDRESS, else auto — the order of Ray's
// job client, except that a key in the config wins over the environment like every other key.
void ResolveAddress(Diag* d, const VarLookup& vars, AddressKeys k, bool ray_mode, const Loc& mode_loc, RayParams* ray) {
  std::string source = "execution_params.ray.address";
  if (!k.address && ray_mode) {
    k.address = vars("RAY_API_SERVER_ADDRESS");
    source = "$RAY_API_SERVER_ADDRESS";
  }
  if (!k.address || k.address->empty()) {
    k.address = vars("RAY_ADDRESS");
    source = "$RAY_ADDRESS";
  }
  if (!k.address || k.address->empty()) {
    k.address = "auto";  // Ray's default too: the dashboard on this machine
    source = "the default address";
  }
  ray->given_address = *k.address;
  std::string why;
  ray->address = RayJobsApiUrl(*k.address, ray->dashboard_port, &why);
  bool from_config = source == "execution_params.ray.address";
  if (!ray_mode && !from_config) return;  // other modes never submit to Ray
  if (ray->address.empty())
    d->Error(from_config ? k.address_loc : mode_loc, source + "='" + *k.address + "': " + why + kAddressForms);
  if (k.port_given && IsHttpUrl(*k.address))
    d->Error(k.port_loc, "execution_params.ray.dashboard_port applies to ray://, host:port and auto addresses; " +
                             source + " is a URL with its own port");
}

}  // namespace

void ReadRay(Diag* d, const VarLookup& vars, const YAML::Node& node, bool ray_mode, const Loc& mode_loc,
             RayParams* ray) {
  if (node.IsDefined() && !node.IsNull() && !node.IsMap()) {
    d->Error(node, "execution_params.ray: expected a map, got " + Describe(node));
    return;
  }
  AddressKeys keys;
  if (node.IsDefined() && node.IsMap()) {
    MapReader r(d, &vars, node, "execution_params.ray");
    ReadAddressKeys(d, &r, &keys, ray);
    if (r.Double("num_cpus", &ray->num_cpus) && !(ray->num_cpus >= 0))
      d->Error(r.LocOf("num_cpus"), "execution_params.ray.num_cpus must be >= 0");
    if (r.Double("num_gpus", &ray->num_gpus) && !(ray->num_gpus >= 0))
      d->Error(r.LocOf("num_gpus"), "execution_params.ray.num_gpus must be >= 0");
    Value memory;
    if (r.AnyValue("memory", &memory)) {
      int64_t bytes = memory.is_string() ? ParseMemory(memory.as_string()) : memory.is_int() ? memory.as_int() : -1;
      if (bytes < 0)
        d->Error(r.LocOf("memory"),
                 "execution_params.ray.memory must be bytes or a size such as 16GiB, got " + ToJson(memory));
      else ray->memory_bytes = bytes;
    }
    Value env;
    if (r.MapValue("runtime_env", &env)) ray->runtime_env = env.as_object().empty() ? "" : ToJson(env);
    if (r.Int("max_parallel", &ray->max_parallel) && ray->max_parallel < 1)
      d->Error(r.LocOf("max_parallel"), "execution_params.ray.max_parallel must be >= 1");
    if (r.String("python", &ray->python) && ray->python.find_first_not_of(" \t") == std::string::npos)
      d->Error(r.LocOf("python"), "execution_params.ray.python must not be blank");
    r.Finish();
  }
  ResolveAddress(d, vars, keys, ray_mode, mode_loc, ray);
}

}  // namespace mmirage::config
