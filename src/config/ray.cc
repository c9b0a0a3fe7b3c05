// execution_params.ray: the Ray Jobs API address and the resources of each shard task (docs/ray.md).
#include <cctype>
#include <cstdint>
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

}  // namespace

void ReadRay(Diag* d, const VarLookup& vars, const YAML::Node& node, RayParams* ray) {
  if (node.IsDefined() && !node.IsNull() && !node.IsMap()) {
    d->Error(node, "execution_params.ray: expected a map, got " + Describe(node));
    return;
  }
  bool given = node.IsDefined() && node.IsMap();
  std::optional<std::string> address;
  if (given) {
    MapReader r(d, &vars, node, "execution_params.ray");
    if (r.OptString("address", &address) && address && !IsHttpUrl(*address)) {
      d->Error(r.LocOf("address"),
               "execution_params.ray.address must be the Ray dashboard's http(s)://host:port "
               "(the Jobs API), got '" +
                   *address + "'");
    }
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
  if (!address) address = vars("RAY_ADDRESS");
  ray->address = address && !address->empty() ? *address : "http://127.0.0.1:8265";
  while (ray->address.size() > 8 && ray->address.back() == '/') ray->address.pop_back();
}

}  // namespace mmirage::config
