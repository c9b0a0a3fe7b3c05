#include "state/timeline.h"

#include <cmath>
#include <cstdio>

#include "data/json.h"
#include "state/heartbeat.h"

namespace mmirage {
namespace {

// Numbers with at most `nd` decimals (compact lines; no float noise in the file).
Value Rounded(double x, int nd) {
  double m = std::pow(10.0, nd);
  return Value(std::round(x * m) / m);
}

std::optional<double> GetD(const Value& v, const char* k) {
  const Value* x = v.Find(k);
  return x && x->is_number() ? std::optional<double>(x->as_number()) : std::nullopt;
}
std::optional<int64_t> GetI(const Value& v, const char* k) {
  const Value* x = v.Find(k);
  return x && x->is_int() ? std::optional<int64_t>(x->as_int()) : std::nullopt;
}
std::optional<std::string> GetS(const Value& v, const char* k) {
  const Value* x = v.Find(k);
  return x && x->is_string() ? std::optional<std::string>(x->as_string()) : std::nullopt;
}

// Rates of `e` over the interval since `prev` (same attempt).
void SetRates(TimelineEntry* e, const TimelineEntry& prev) {
  double dt = e->t - prev.t;
  if (dt <= 0) {
    e->rows_per_sec.reset();
    e->tok_per_sec.reset();
    return;
  }
  double rows = static_cast<double>((e->rows - e->resumed) - (prev.rows - prev.resumed));
  e->rows_per_sec = std::round(std::max(0.0, rows) / dt * 100) / 100;
  e->tok_per_sec = std::round(static_cast<double>(std::max<int64_t>(0, e->out_tok - prev.out_tok)) / dt * 10) / 10;
}

}  // namespace

std::string TimelineEntry::ToJsonLine() const {
  Value v = Value::EmptyObject();
  v.Set("t", Rounded(t, 3));
  v.Set("attempt", attempt);
  if (!event.empty()) v.Set("event", event);
  if (is_sample()) {
    v.Set("rows", rows);
    v.Set("failed", failed);
    if (resumed != 0) v.Set("resumed", resumed);
    v.Set("in_tok", in_tok);
    v.Set("out_tok", out_tok);
    if (rows_per_sec) v.Set("rows_per_sec", Rounded(*rows_per_sec, 2));
    if (tok_per_sec) v.Set("tok_per_sec", Rounded(*tok_per_sec, 1));
    if (gpu) v.Set("gpu", Rounded(*gpu, 1));
    if (cpu) v.Set("cpu", Rounded(*cpu, 1));
    if (in_flight) v.Set("in_flight", *in_flight);
    if (window) v.Set("window", *window);
    if (rpm_limit) v.Set("rpm_limit", Rounded(*rpm_limit, 1));
    if (tpm_limit) v.Set("tpm_limit", Rounded(*tpm_limit, 1));
  }
  if (host) v.Set("host", *host);
  if (pid) v.Set("pid", *pid);
  if (slurm_job_id) v.Set("slurm_job_id", *slurm_job_id);
  if (slurm_array_task_id) v.Set("slurm_array_task_id", *slurm_array_task_id);
  if (interval) v.Set("interval", Rounded(*interval, 3));
  if (load_seconds) v.Set("load_seconds", Rounded(*load_seconds, 3));
  if (capacity) v.Set("capacity", *capacity);
  if (outcome) v.Set("outcome", *outcome);
  if (error) v.Set("error", error->size() > 300 ? error->substr(0, 300) + "..." : *error);
  if (replica) v.Set("replica", *replica);
  if (replica_name) v.Set("name", *replica_name);
  if (change) v.Set("change", *change);
  return ToJson(v) + "\n";
}

std::optional<TimelineEntry> TimelineEntry::FromJsonLine(std::string_view line) {
  auto v = ParseJson(line);
  if (!v.ok() || !v->is_object()) return std::nullopt;
  auto t = GetD(*v, "t");
  auto attempt = GetI(*v, "attempt");
  if (!t || !attempt) return std::nullopt;
  TimelineEntry e;
  e.t = *t;
  e.attempt = *attempt;
  e.event = GetS(*v, "event").value_or("");
  e.rows = GetI(*v, "rows").value_or(0);
  e.failed = GetI(*v, "failed").value_or(0);
  e.resumed = GetI(*v, "resumed").value_or(0);
  e.in_tok = GetI(*v, "in_tok").value_or(0);
  e.out_tok = GetI(*v, "out_tok").value_or(0);
  e.rows_per_sec = GetD(*v, "rows_per_sec");
  e.tok_per_sec = GetD(*v, "tok_per_sec");
  e.gpu = GetD(*v, "gpu");
  e.cpu = GetD(*v, "cpu");
  e.in_flight = GetI(*v, "in_flight");
  e.window = GetI(*v, "window");
  e.rpm_limit = GetD(*v, "rpm_limit");
  e.tpm_limit = GetD(*v, "tpm_limit");
  e.host = GetS(*v, "host");
  e.pid = GetI(*v, "pid");
  e.slurm_job_id = GetS(*v, "slurm_job_id");
  e.slurm_array_task_id = GetS(*v, "slurm_array_task_id");
  e.interval = GetD(*v, "interval");
  e.load_seconds = GetD(*v, "load_seconds");
  e.capacity = GetI(*v, "capacity");
  e.outcome = GetS(*v, "outcome");
  e.error = GetS(*v, "error");
  e.replica = GetI(*v, "replica");
  e.replica_name = GetS(*v, "name");
  e.change = GetS(*v, "change");
  return e;
}

std::string TimelinePath(const std::string& state_dir, int64_t shard_id) {
  return JoinPath(ShardStateDir(state_dir, shard_id), "timeline.jsonl");
}

namespace {
std::vector<TimelineEntry> ParseTimelineText(const std::string& text, int64_t* bad) {
  std::vector<TimelineEntry> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line(text.data() + pos, (nl == std::string::npos ? text.size() : nl) - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (auto e = TimelineEntry::FromJsonLine(line)) {
      out.push_back(std::move(*e));
    } else if (bad) {
      ++*bad;
    }
  }
  return out;
}
}  // namespace

std::vector<TimelineEntry> ReadTimeline(Env* env, const std::string& state_dir, int64_t shard_id, int64_t* bad) {
  auto text = env->ReadFileToString(TimelinePath(state_dir, shard_id));
  if (!text.ok()) return {};
  return ParseTimelineText(*text, bad);
}

void ThinTimeline(std::vector<TimelineEntry>* entries, size_t keep_recent) {
  std::vector<TimelineEntry>& in = *entries;
  if (in.size() <= keep_recent) return;
  const size_t old_end = in.size() - keep_recent;
  std::vector<TimelineEntry> out;
  out.reserve(in.size());
  bool drop = false;          // alternates over the droppable samples
  bool prev_dropped = false;  // the entry before this one was dropped
  for (size_t i = 0; i < in.size(); ++i) {
    const TimelineEntry& e = in[i];
    bool first_of_attempt = i == 0 || in[i - 1].attempt != e.attempt || !in[i - 1].is_sample();
    bool last_of_attempt = i + 1 == in.size() || in[i + 1].attempt != e.attempt || !in[i + 1].is_sample();
    if (i < old_end && e.is_sample() && !first_of_attempt && !last_of_attempt) {
      drop = !drop;
      if (!drop) {
        prev_dropped = true;
        continue;
      }
    }
    out.push_back(e);
    if (prev_dropped && e.is_sample() && out.size() >= 2 && out[out.size() - 2].attempt == e.attempt) {
      SetRates(&out.back(), out[out.size() - 2]);
    }
    prev_dropped = false;
  }
  in = std::move(out);
}

TimelineWriter::TimelineWriter(Env* env, std::string state_dir, int64_t shard_id, int64_t attempt,
                               TimelineOptions options)
    : env_(env), path_(TimelinePath(state_dir, shard_id)), attempt_(attempt), options_(options) {}

Status TimelineWriter::Append(TimelineEntry e) {
  if (e.t == 0) e.t = static_cast<double>(env_->NowMicros()) / 1e6;
  e.attempt = attempt_;
  if (e.is_sample()) {
    if (last_sample_) SetRates(&e, *last_sample_);
    last_sample_ = e;
  } else if (e.event == "start" || e.event == "loaded") {
    // The first sample's interval starts at the end of the model load (the load is an event of its own).
    TimelineEntry base = e;
    base.rows = base.resumed = base.out_tok = 0;
    if (e.event == "start" || !last_sample_ || !last_sample_->is_sample()) last_sample_ = base;
  }
  std::string line = e.ToJsonLine();
  if (!lines_) {
    auto text = env_->ReadFileToString(path_);
    size_t n = 0;
    if (text.ok()) {
      for (char c : *text) n += c == '\n';
      // A torn last line (a killed writer) is ended first, so that this line stays whole.
      if (!text->empty() && text->back() != '\n') line.insert(line.begin(), '\n');
    }
    lines_ = n;
  }
  if (!file_) { MMIRAGE_ASSIGN_OR_RETURN(file_, env_->NewWritableFile(path_, /*append=*/true)); }
  MMIRAGE_TRY(file_->Append(line));
  MMIRAGE_TRY(file_->Flush());
  ++*lines_;
  if (*lines_ > options_.max_lines) return Thin();
  return Status::OK();
}

Status TimelineWriter::Thin() {
  if (file_) {
    MMIRAGE_TRY(file_->Close());
    file_.reset();
  }
  MMIRAGE_ASSIGN_OR_RETURN(std::string text, env_->ReadFileToString(path_));
  std::vector<TimelineEntry> entries = ParseTimelineText(text, nullptr);
  while (entries.size() > options_.max_lines - options_.max_lines / 4) {
    size_t before = entries.size();
    ThinTimeline(&entries, options_.keep_recent);
    if (entries.size() == before) break;  // only events and attempt boundaries left
  }
  std::string out;
  for (const auto& x : entries) out += x.ToJsonLine();
  lines_ = entries.size();
  return WriteFileAtomically(env_, path_, out);
}

}  // namespace mmirage
