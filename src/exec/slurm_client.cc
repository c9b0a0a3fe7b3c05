#include "exec/slurm_client.h"

#include <cctype>
#include <set>
#include <sstream>

#include "util/log.h"
#include "util/parse_int.h"

namespace mmirage::exec {
namespace {

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

std::string FirstWord(const std::string& s) {
  std::string t = Trim(s);
  size_t sp = t.find(' ');
  return sp == std::string::npos ? t : t.substr(0, sp);
}

// "5-7,9%2" (without brackets) → {5,6,7,9}. False when malformed.
bool ExpandTaskList(std::string list, std::vector<int64_t>* ids) {
  size_t pct = list.find('%');
  if (pct != std::string::npos) list.resize(pct);
  std::stringstream ss(list);
  std::string part;
  while (std::getline(ss, part, ',')) {
    size_t dash = part.find('-');
    std::optional<int64_t> a, b;
    if (dash == std::string::npos) {
      a = b = ParseNonNegativeInt64(part);
    } else {
      a = ParseNonNegativeInt64(std::string_view(part).substr(0, dash));
      b = ParseNonNegativeInt64(std::string_view(part).substr(dash + 1));
    }
    if (!a || !b || *b < *a || *b - *a > 1000000) return false;
    for (int64_t i = *a; i <= *b; ++i) ids->push_back(i);
  }
  return true;
}

// "<job>_<tasks>" or "<job>" → task ids (a plain job is task 0). False when it is another job or malformed.
bool TaskIdsOf(const std::string& job_id, const std::string& field, std::vector<int64_t>* ids) {
  if (field == job_id) {
    ids->push_back(0);
    return true;
  }
  if (field.size() <= job_id.size() + 1 || field.compare(0, job_id.size(), job_id) != 0 || field[job_id.size()] != '_')
    return false;
  std::string rest = field.substr(job_id.size() + 1);
  if (rest.front() == '[') {
    if (rest.back() != ']') return false;
    return ExpandTaskList(rest.substr(1, rest.size() - 2), ids);
  }
  std::optional<int64_t> id = ParseNonNegativeInt64(rest);
  if (!id) return false;
  ids->push_back(*id);
  return true;
}

std::map<int64_t, std::string> ParseStateLines(const std::string& job_id, const std::string& out) {
  std::map<int64_t, std::string> states;
  std::stringstream ss(out);
  std::string line;
  while (std::getline(ss, line)) {
    line = Trim(line);
    size_t bar = line.find('|');
    if (bar == std::string::npos) continue;
    std::string id_field = line.substr(0, bar);
    std::string rest = line.substr(bar + 1);
    std::string state = FirstWord(rest.substr(0, rest.find('|')));
    std::vector<int64_t> ids;
    if (state.empty() || !TaskIdsOf(job_id, id_field, &ids)) continue;
    for (int64_t id : ids) states[id] = state;
  }
  return states;
}

}  // namespace

bool IsTerminalJobState(const std::string& state) {
  static const std::set<std::string> kTerminal = {"COMPLETED",     "CANCELLED", "FAILED",      "TIMEOUT",
                                                  "NODE_FAIL",     "PREEMPTED", "BOOT_FAIL",   "DEADLINE",
                                                  "OUT_OF_MEMORY", "REVOKED",   "SPECIAL_EXIT"};
  return kTerminal.count(state) > 0;
}

bool JobSnapshot::Active() const {
  if (gone) return false;
  for (const auto& [id, st] : task_states)
    if (!IsTerminalJobState(st)) return true;
  return false;
}

JobSnapshot ParseSqueue(const std::string& job_id, const std::string& out) {
  JobSnapshot s;
  s.task_states = ParseStateLines(job_id, out);
  return s;
}

std::map<int64_t, std::string> ParseSacct(const std::string& job_id, const std::string& out) {
  // Step lines ("123_4.batch", "123_4.0") never match TaskIdsOf: their task part is not an integer.
  return ParseStateLines(job_id, out);
}

CommandRunner DefaultCommandRunner() {
  return [](const std::vector<std::string>& argv) { return RunCommandCapture(argv, 300); };
}

Result<std::string> SlurmClient::Submit(const SbatchRequest& request, const std::string& script_path) const {
  MMIRAGE_TRY(WriteFileAtomically(env_, script_path, request.script));
  std::vector<std::string> argv = request.argv;
  argv.push_back(script_path);
  MMIRAGE_ASSIGN_OR_RETURN(CommandOutput r, runner_(argv));
  if (r.exit_code != 0) return Status::Unavailable("sbatch failed: " + Trim(r.err.empty() ? r.out : r.err));
  std::string out = Trim(r.out);
  std::string id = out.substr(0, out.find(';'));
  if (!ParseNonNegativeInt64(id)) return Status::Internal("Unable to parse job id from sbatch output: " + out);
  return id;
}

Result<JobSnapshot> SlurmClient::Poll(const std::string& job_id) const {
  MMIRAGE_ASSIGN_OR_RETURN(CommandOutput r, runner_({"squeue", "-h", "-j", job_id, "-t", "all", "-o", "%i|%T"}));
  if (r.exit_code != 0) {
    if (r.err.find("Invalid job id") != std::string::npos) {
      JobSnapshot gone;
      gone.gone = true;
      return gone;
    }
    return Status::Unavailable("squeue failed (exit " + std::to_string(r.exit_code) + "): " + Trim(r.err));
  }
  JobSnapshot s = ParseSqueue(job_id, r.out);
  // squeue exits 0 with no line for a job it no longer lists.
  if (s.task_states.empty()) s.gone = true;
  return s;
}

std::optional<std::map<int64_t, std::string>> SlurmClient::Accounting(const std::string& job_id) const {
  auto r = runner_({"sacct", "-n", "-P", "-j", job_id, "-o", "JobID,State,ExitCode"});
  if (!r.ok()) return std::nullopt;
  if (r->exit_code != 0) {
    LOG_DEBUG("sacct unavailable: " << Trim(r->err));
    return std::nullopt;
  }
  return ParseSacct(job_id, r->out);
}

Status SlurmClient::Cancel(const std::string& job_id) const {
  MMIRAGE_ASSIGN_OR_RETURN(CommandOutput r, runner_({"scancel", job_id}));
  if (r.exit_code != 0) return Status::Unavailable("scancel " + job_id + " failed: " + Trim(r.err));
  return Status::OK();
}

}  // namespace mmirage::exec
