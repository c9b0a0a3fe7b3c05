#include "exec/slurm_script.h"

#include <algorithm>
#include <set>

#include "process/llm/engine_factory.h"

namespace mmirage::exec {
namespace {

std::string TrimWs(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// Shell path: `~` expanded; `$…` kept for the compute node; relative → under project_root.
std::string ShellPath(Env* env, const std::string& value, const std::string& project_root,
                      const config::VarLookup& lookup) {
  std::string v = config::ExpandUser(TrimWs(value), lookup);
  if (!v.empty() && v[0] == '$') return v;
  if (v.empty() || v[0] != '/') v = JoinPath(project_root, v);
  return env->AbsolutePath(v);
}

// sbatch file-name patterns treat % specially; a literal % in a directory is written %%.
std::string EscapePercent(const std::string& s) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

}  // namespace

std::string ShellQuote(std::string_view v) {
  if (v.empty()) return "''";
  bool bare = std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
  });
  if (bare) return std::string(v);
  std::string out = "'";
  for (char c : v) {
    if (c == '\'') out += "'\"'\"'";
    else out += c;
  }
  return out + "'";
}

Result<std::string> DoubleQuoteNoSubst(std::string_view v) {
  if (v.find('`') != std::string_view::npos || v.find("$(") != std::string_view::npos) {
    return Status::InvalidArgument(
        "Config value contains unsupported shell command substitution (` or '$('). Command substitution is not "
        "allowed in SLURM-generated scripts: " +
        std::string(v));
  }
  std::string out = "\"";
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string FormatArraySpec(const std::vector<int64_t>& ids, int64_t num_shards, int64_t throttle) {
  std::string spec;
  if (ids.empty()) {
    spec = num_shards <= 1 ? "0" : "0-" + std::to_string(num_shards - 1);
  } else {
    std::vector<int64_t> v(ids);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    for (size_t i = 0; i < v.size();) {
      size_t j = i;
      while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
      if (!spec.empty()) spec += ',';
      if (j - i >= 2) {
        spec += std::to_string(v[i]) + "-" + std::to_string(v[j]);
      } else {
        for (size_t k = i; k <= j; ++k) spec += (k > i ? "," : "") + std::to_string(v[k]);
      }
      i = j + 1;
    }
  }
  if (throttle > 0) spec += "%" + std::to_string(throttle);
  return spec;
}

Result<SlurmPaths> ResolveSlurmPaths(Env* env, const config::Config& config, const std::string& cwd,
                                     const std::string& self_exe, const config::VarLookup& lookup) {
  const auto& e = config.execution;
  SlurmPaths p;
  std::string root = cwd;
  if (e.project_root && !TrimWs(*e.project_root).empty()) {
    root = config::ExpandUser(TrimWs(*e.project_root), lookup);
    if (root[0] != '/') root = JoinPath(cwd, root);
  }
  auto real = env->RealPath(root);
  if (!real.ok()) {
    return Status::InvalidArgument("execution_params.project_root: " + root + " does not exist (" +
                                   real.status().message() + ")");
  }
  p.project_root = *real;
  p.report_dir = ShellPath(env, e.report_dir, p.project_root, lookup);
  if (!p.report_dir.empty() && p.report_dir[0] == '$') {
    return Status::InvalidArgument("execution_params.report_dir: " + p.report_dir +
                                   " must be a path on the submitting host (an undefined variable?)");
  }
  p.config_path = env->AbsolutePath(config.path);
  if (e.mmirage_bin && !TrimWs(*e.mmirage_bin).empty()) {
    std::string bin = config::ExpandUser(TrimWs(*e.mmirage_bin), lookup);
    p.mmirage_bin = env->AbsolutePath(bin[0] == '/' ? bin : JoinPath(cwd, bin));
  } else {
    p.mmirage_bin = self_exe;
  }
  if (!env->IsRegularFile(p.mmirage_bin)) {
    return Status::InvalidArgument("execution_params.mmirage_bin: " + p.mmirage_bin + " is not a file");
  }
  p.hf_home = ShellPath(env, e.hf_home, p.project_root, lookup);
  p.state_dir = ShellPath(env, config.loading.state_dir, p.project_root, lookup);
  if (e.edf_env && !TrimWs(*e.edf_env).empty()) p.edf_env = ShellPath(env, *e.edf_env, p.project_root, lookup);
  return p;
}

Result<SbatchRequest> BuildSbatchRequest(const config::ExecutionParams& e, const SlurmPaths& paths,
                                         const SbatchJob& job) {
  if (!e.account || TrimWs(*e.account).empty())
    return Status::InvalidArgument("execution_params.account must be set in slurm mode");
  std::set<int64_t> seen;
  for (int64_t id : job.shard_ids) {
    if (id < 0 || id >= job.num_shards) {
      return Status::InvalidArgument("shard id " + std::to_string(id) + " is outside [0, " +
                                     std::to_string(job.num_shards) + ")");
    }
    if (!seen.insert(id).second) return Status::InvalidArgument("shard id " + std::to_string(id) + " is repeated");
  }
  SbatchRequest r;
  // ---- the script -----------------------------------------------------------------------------------------------
  MMIRAGE_ASSIGN_OR_RETURN(std::string hf_home, DoubleQuoteNoSubst(paths.hf_home));
  MMIRAGE_ASSIGN_OR_RETURN(std::string config_path, DoubleQuoteNoSubst(paths.config_path));
  MMIRAGE_ASSIGN_OR_RETURN(std::string bin, DoubleQuoteNoSubst(paths.mmirage_bin));
  MMIRAGE_ASSIGN_OR_RETURN(std::string state_dir, DoubleQuoteNoSubst(paths.state_dir));
  std::string& s = r.script;
  s += "#!/bin/bash\n";
  s += "# Generated by mmirage: one array task runs one shard (shard id = SLURM_ARRAY_TASK_ID).\n";
  s += "set -euo pipefail\n";
  s += "export HF_HOME=" + hf_home + "\n";
  s += "export MMIRAGE_CONFIG=" + config_path + "\n";
  s += "export MMIRAGE_BIN=" + bin + "\n";
  if (job.stats) s += "export MMIRAGE_COLLECT_STATS=1\n";
  // The array's tasks that run at once split the endpoints' rate limits (one account, however many nodes).
  int64_t tasks = job.shard_ids.empty() ? job.num_shards : static_cast<int64_t>(job.shard_ids.size());
  int64_t at_once = e.array_parallelism.value_or(0) > 0 ? std::min(*e.array_parallelism, tasks) : tasks;
  if (at_once > 1)
    s += "export " + std::string(process::llm::kRateLimitSharesVar) + "=" + std::to_string(at_once) + "\n";
  s += "mkdir -p \"$HF_HOME\"\n";
  s += "mkdir -p " + state_dir + "\n";
  // One copy of the worker, whatever nodes × ntasks_per_node the allocation has.
  s += "srun_args=(--ntasks=1 --cpus-per-task \"${SLURM_CPUS_PER_TASK:-1}\" --wait 60)\n";
  if (!paths.edf_env.empty()) s += "srun_args+=(--environment=" + ShellQuote(paths.edf_env) + ")\n";
  s += "srun_args+=(-A " + ShellQuote(TrimWs(*e.account)) + ")\n";
  if (e.reservation && !TrimWs(*e.reservation).empty())
    s += "srun_args+=(--reservation=" + ShellQuote(TrimWs(*e.reservation)) + ")\n";
  s += "srun \"${srun_args[@]}\" \"$MMIRAGE_BIN\" run --config \"$MMIRAGE_CONFIG\" "
       "--shard-id \"${SLURM_ARRAY_TASK_ID:?mmirage SLURM jobs must be array jobs}\"";
  if (job.stats) s += " --stats";
  s += "\n";
  s += "echo \"Shard ${SLURM_ARRAY_TASK_ID} completed\"\n";
  // ---- the command line ---------------------------------------------------------------------------------------
  auto& a = r.argv;
  std::string logs = EscapePercent(paths.report_dir) + "/R-%x.%A_%a";
  a = {"sbatch",
       "--parsable",
       "--job-name=" + e.job_name,
       "--chdir=" + paths.project_root,
       "--output=" + logs + ".out",
       "--error=" + logs + ".err",
       "--nodes=" + std::to_string(e.nodes),
       "--ntasks-per-node=" + std::to_string(e.ntasks_per_node)};
  if (e.gpus > 0) a.push_back("--gres=gpu:" + std::to_string(e.gpus));
  a.push_back("--cpus-per-task=" + std::to_string(e.cpus_per_task));
  a.push_back("--time=" + e.time_limit);
  a.push_back("--account=" + TrimWs(*e.account));
  auto opt = [&](const char* flag, const std::optional<std::string>& v) {
    if (v && !TrimWs(*v).empty()) a.push_back(std::string(flag) + "=" + TrimWs(*v));
  };
  opt("--reservation", e.reservation);
  opt("--partition", e.partition);
  opt("--qos", e.qos);
  opt("--mem", e.mem);
  a.push_back("--array=" + FormatArraySpec(job.shard_ids, job.num_shards, e.array_parallelism.value_or(0)));
  // Last, so that they override anything above (sbatch keeps the last value of an option).
  for (const auto& x : e.extra_sbatch_args) a.push_back(x);
  return r;
}

}  // namespace mmirage::exec
