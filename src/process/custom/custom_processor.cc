// How the pool works: each worker runs share/mmirage/custom_worker.py (shipped next to the binary) under python3 —
// or `python_executable` / $MMIRAGE_PYTHON — or, with `command: [...]`, any program that speaks the same
// JSON-lines protocol. A worker loads the script once, then answers one row (the row's whole variable environment
// as a JSON object) per line. Rows go to whichever worker is free; the scheduler puts results back in row order.
// A worker that misses timeout_ms is killed and replaced alone (re-running the script's initialisation); the
// circuit breaker gives every row after a fatal fault an error naming the real reason.

#include "process/custom/custom_processor.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "data/json.h"
#include "util/env.h"
#include "util/log.h"
#include "util/process/pipe_process.h"
#include "util/process/process_info.h"

namespace mmirage::process::custom {
namespace {

constexpr int kPollSliceMs = 100;  // a busy worker thread notices Shutdown this often

std::string Preview(std::string_view s, size_t n = 200) {
  std::string out(s.substr(0, n));
  if (s.size() > n) out += "...";
  return out;
}

std::string DescribeExit(int status) {
  if (status > 128) return "was killed by signal " + std::to_string(status - 128);
  return "exited with status " + std::to_string(status);
}

struct Job {
  std::string row_json;  // the row's variables, JSON
  std::function<void(GenerateResult)> done;
};

class CustomPool final : public OutputProcessor {
 public:
  CustomPool(const config::Processor& p, std::vector<std::string> argv)
      : cfg_(p.custom), loc_(p.loc.ToString()), argv_(std::move(argv)) {}
  ~CustomPool() override { Shutdown(); }

  // Boots every worker in parallel, then waits for each handshake.
  Status Boot(double timeout_seconds) {
    uint64_t t0 = Env::Default()->MonotonicMicros();
    boot_timeout_ms_ = static_cast<int>(timeout_seconds * 1000);
    std::vector<std::unique_ptr<PipeProcess>> procs;
    for (int64_t i = 0; i < cfg_.max_workers; ++i) {
      MMIRAGE_ASSIGN_OR_RETURN(auto pp, Spawn());
      procs.push_back(std::move(pp));
    }
    for (auto& pp : procs) {
      Status s = Handshake(pp.get());
      if (!s.ok()) {
        for (auto& q : procs) q->Kill();
        return s;
      }
    }
    load_seconds_ = static_cast<double>(Env::Default()->MonotonicMicros() - t0) / 1e6;
    for (auto& pp : procs) {
      threads_.emplace_back([this, proc = std::move(pp)]() mutable { WorkerLoop(std::move(proc)); });
    }
    return Status::OK();
  }

  void Generate(size_t, std::string, const Value& vars, const RowInfo&,
                std::function<void(GenerateResult)> done) override {
    Job job{ToJson(vars), std::move(done)};
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!stopping_) {
        queue_.push_back(std::move(job));
        cv_.notify_one();
        return;
      }
    }
    GenerateResult r;
    r.status = Status::Unavailable("the custom processor is shut down");
    job.done(std::move(r));
  }

  int Capacity() const override { return static_cast<int>(cfg_.max_workers); }
  double LoadSeconds() const override { return load_seconds_; }

  // Concurrent calls are serialised by shutdown_mu_: each thread is joined once, and every call returns only
  // once the workers have stopped.
  void Shutdown() override {
    std::lock_guard<std::mutex> serial(shutdown_mu_);
    {
      std::lock_guard<std::mutex> l(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  Result<std::unique_ptr<PipeProcess>> Spawn() {
    PipeProcessOptions o;
    o.argv = argv_;
    auto pp = PipeProcess::Start(o);
    if (!pp.ok()) return pp.status().WithContext(loc_ + ": processor 'custom': cannot start worker");
    return pp;
  }

  // Reads the worker's first line: {"ready": true} or {"ready": false, "error": "..."}.
  Status Handshake(PipeProcess* pp) {
    std::string where = loc_ + ": processor 'custom': ";
    int64_t waited = 0;
    while (true) {
      auto line = pp->ReadLine(kPollSliceMs);
      if (line.ok()) {
        auto v = ParseJson(*line);
        const Value* ready = v.ok() && v->is_object() ? v->Find("ready") : nullptr;
        if (ready == nullptr || !ready->is_bool())
          return Status::InvalidArgument(where + "the worker's first line is not a handshake: " + Preview(*line));
        if (ready->as_bool()) return Status::OK();
        const Value* err = v->Find("error");
        pp->Close(2000);
        return Status::InvalidArgument(where + (err && err->is_string() ? err->as_string() : "worker failed to start"));
      }
      if (line.status().IsUnavailable()) {  // no line yet
        waited += kPollSliceMs;
        if (stopping_) return Status::Unavailable(where + "shut down during start-up");
        if (waited >= boot_timeout_ms_) {
          pp->Kill();
          return Status::InvalidArgument(where + "the worker did not answer its handshake within " +
                                         std::to_string(boot_timeout_ms_ / 1000) + " s");
        }
        continue;
      }
      int st = pp->Close(2000);
      return Status::InvalidArgument(where + "the worker " + DescribeExit(st) +
                                     " before it was ready (see its stderr above)");
    }
  }

  // Records a tripped breaker (the first reason wins) and returns the fatal status.
  Status Trip(const std::string& reason) {
    std::lock_guard<std::mutex> l(mu_);
    if (tripped_.empty()) {
      tripped_ = "Custom processor circuit breaker tripped: " + reason;
      LOG_ERROR(tripped_);
    }
    return Status::Internal(tripped_);
  }

  std::string TrippedReason() {
    std::lock_guard<std::mutex> l(mu_);
    return tripped_;
  }

  static GenerateResult Fatal(Status s) {
    GenerateResult r;
    r.attempts = 1;
    r.status = std::move(s);
    r.fatal = true;
    return r;
  }

  // A row sent to a worker and not answered yet.
  struct Sent {
    uint64_t id;
    Job job;
  };

  static GenerateResult ShutDownResult() {
    GenerateResult r;
    r.status = Status::Unavailable("the custom processor is shut down");
    return r;
  }

  // Takes the next job: waits when this worker has nothing in flight; otherwise takes one only when no idle worker
  // is waiting for it (a second row in flight keeps a busy worker fed between replies, but must never wait behind
  // a slow row while another worker is free).
  bool TakeJob(bool busy, Job* job) {
    std::unique_lock<std::mutex> l(mu_);
    if (!busy) {
      ++idle_;
      cv_.wait(l, [&] { return stopping_ || !queue_.empty(); });
      --idle_;
    } else if (queue_.size() <= static_cast<size_t>(idle_)) {
      return false;
    }
    if (queue_.empty()) return false;
    *job = std::move(queue_.front());
    queue_.pop_front();
    return true;
  }

  // Writes one request; false when the worker is gone.
  bool Send(PipeProcess* proc, std::deque<Sent>* inflight, Job job) {
    uint64_t id = ++next_id_;
    std::string req = "{\"id\":" + std::to_string(id) + ",\"row\":" + job.row_json + "}\n";
    inflight->push_back(Sent{id, std::move(job)});
    return proc->Write(req).ok();
  }

  void FailAll(std::deque<Sent>* inflight, const GenerateResult& r) {
    for (auto& s : *inflight) s.job.done(r);
    inflight->clear();
  }

  // One worker: keeps up to kDepth rows in flight on its process, answers them in order.
  void WorkerLoop(std::unique_ptr<PipeProcess> proc) {
    constexpr size_t kDepth = 2;
    std::deque<Sent> inflight;
    uint64_t head_start = 0;  // when the worker started on inflight.front() (it runs rows one after the other)
    Env* env = Env::Default();
    while (true) {
      // Fill.
      while (inflight.size() < kDepth) {
        Job job;
        if (!TakeJob(!inflight.empty(), &job)) break;
        if (stopping_) {
          job.done(ShutDownResult());
          continue;
        }
        if (std::string t = TrippedReason(); !t.empty() || !proc) {
          job.done(Fatal(Status::Internal(t.empty() ? Trip("no worker process").message() : t)));
          continue;
        }
        if (inflight.empty()) head_start = env->MonotonicMicros();
        if (!Send(proc.get(), &inflight, std::move(job))) {
          int st = proc->Kill();
          proc.reset();
          FailAll(&inflight, Fatal(Trip("Worker process crashed fatally: worker " + DescribeExit(st) +
                                        " before it was sent a row")));
        }
      }
      if (inflight.empty()) {
        std::lock_guard<std::mutex> l(mu_);
        if (stopping_ && queue_.empty()) break;
        continue;
      }
      // Wait for the head's reply.
      const int64_t timeout_ms = cfg_.timeout_ms.value_or(-1);
      int slice = kPollSliceMs;
      if (timeout_ms >= 0) {
        int64_t left = timeout_ms - static_cast<int64_t>((env->MonotonicMicros() - head_start) / 1000);
        if (left <= 0) {
          // Kill and replace only this worker (re-running the script's initialisation), as MMIRAGE does; the rows
          // queued behind the timed-out one are sent again to the new worker.
          proc->Kill();
          proc.reset();
          Sent head = std::move(inflight.front());
          inflight.pop_front();
          GenerateResult r = Fallback(&timeouts_, cfg_.max_timeouts, "timeouts",
                                      "no result within timeout_ms=" + std::to_string(timeout_ms));
          if (!r.fatal) {
            auto fresh = Spawn();
            Status s = fresh.ok() ? Handshake(fresh->get()) : fresh.status();
            if (!s.ok()) {
              r = Fatal(Trip("cannot replace a timed-out worker: " + s.message()));
            } else {
              proc = std::move(*fresh);
            }
          }
          head.job.done(std::move(r));
          std::deque<Sent> again;
          again.swap(inflight);
          head_start = env->MonotonicMicros();
          for (auto& x : again) {
            if (!proc) {
              x.job.done(Fatal(Status::Internal(TrippedReason())));
            } else if (!Send(proc.get(), &inflight, std::move(x.job))) {
              int st = proc->Kill();
              proc.reset();
              FailAll(&inflight,
                      Fatal(Trip("Worker process crashed fatally: worker " + DescribeExit(st) + " after a restart")));
            }
          }
          continue;
        }
        slice = static_cast<int>(std::min<int64_t>(left, kPollSliceMs));
      }
      auto line = proc->ReadLine(slice);
      if (line.status().IsUnavailable()) {
        if (stopping_) {
          proc->Kill();
          proc.reset();
          FailAll(&inflight, ShutDownResult());
        }
        continue;
      }
      if (!line.ok()) {
        int st = proc->Kill();
        proc.reset();
        FailAll(&inflight,
                Fatal(Trip("Worker process crashed fatally: worker " + DescribeExit(st) + " while running a row")));
        continue;
      }
      Sent head = std::move(inflight.front());
      inflight.pop_front();
      head_start = env->MonotonicMicros();
      GenerateResult r = Interpret(head.id, *line, &proc);
      if (!proc) FailAll(&inflight, Fatal(Status::Internal(TrippedReason())));  // protocol broken
      head.job.done(std::move(r));
    }
    if (proc) proc->Close(2000);
  }

  // The fallback value with its warning, or a fatal result when `count` reached `max`.
  GenerateResult Fallback(std::atomic<int64_t>* counter, int64_t max, const char* what, const std::string& why) {
    int64_t n = ++*counter;
    if (n >= max) {
      return Fatal(Trip(std::string("Max ") + what + " reached (" + std::to_string(n) + " of max_" + what + "=" +
                        std::to_string(max) + "); last: " + why));
    }
    GenerateResult r;
    r.attempts = 1;
    r.value = cfg_.fallback_value;
    r.warnings.push_back("custom function: " + why + "; stored fallback_value (" + what + " " + std::to_string(n) +
                         " of max_" + what + "=" + std::to_string(max) + ")");
    return r;
  }

  GenerateResult Interpret(uint64_t id, const std::string& line, std::unique_ptr<PipeProcess>* procp) {
    auto v = ParseJson(line);
    const Value* ok = v.ok() && v->is_object() ? v->Find("ok") : nullptr;
    const Value* rid = ok ? v->Find("id") : nullptr;
    if (ok == nullptr || !ok->is_bool() || rid == nullptr || !rid->is_int() ||
        rid->as_int() != static_cast<int64_t>(id)) {
      (*procp)->Kill();
      procp->reset();
      return Fatal(Trip("the worker broke the protocol (expected {\"id\": " + std::to_string(id) +
                        ", \"ok\": ...}), it wrote: " + Preview(line)));
    }
    GenerateResult r;
    r.attempts = 1;
    if (ok->as_bool()) {
      const Value* value = v->Find("value");
      r.value = value ? *value : Value();
      return r;
    }
    const Value* err = v->Find("error");
    std::string msg = err && err->is_string() ? err->as_string() : "unknown error";
    const Value* kind = v->Find("kind");
    if (kind && kind->is_string() && kind->as_string() == "result") {
      r.status = Status::InvalidArgument(msg);  // a row error: the function's result cannot be stored
      return r;
    }
    return Fallback(&errors_, cfg_.max_errors, "errors", "raised " + msg);
  }

  const config::CustomProcessor cfg_;
  const std::string loc_;
  const std::vector<std::string> argv_;
  int boot_timeout_ms_ = 300000;
  double load_seconds_ = 0;
  std::atomic<uint64_t> next_id_{0};
  std::atomic<int64_t> errors_{0};
  std::atomic<int64_t> timeouts_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::atomic<bool> stopping_{false};
  int idle_ = 0;                      // workers waiting for a job; guarded by mu_
  std::string tripped_;               // guarded by mu_
  std::mutex shutdown_mu_;            // held by Shutdown while it joins (not by the workers: they need mu_)
  std::vector<std::thread> threads_;  // written by Boot before the pool is shared, then guarded by shutdown_mu_
};

}  // namespace

Result<std::string> FindCustomWorkerProgram() {
  MMIRAGE_ASSIGN_OR_RETURN(std::string self, SelfExecutablePath());
  std::string dir = Dirname(self);
  for (const std::string& cand :
       {JoinPath(dir, "share/mmirage/custom_worker.py"), JoinPath(Dirname(dir), "share/mmirage/custom_worker.py")}) {
    if (Env::Default()->IsRegularFile(cand)) return cand;
  }
  return Status::NotFound("the custom worker program share/mmirage/custom_worker.py is not installed next to " + self);
}

Result<std::vector<std::string>> CustomWorkerCommand(const config::CustomProcessor& c,
                                                     const CustomStartOptions& options) {
  if (!c.command.empty()) return c.command;
  Env* env = Env::Default();
  if (!env->IsRegularFile(c.script_path))
    return Status::NotFound("CustomProcessor failed to boot: script_path '" + c.script_path + "' does not exist.");
  std::string worker = options.worker_program;
  if (worker.empty()) { MMIRAGE_ASSIGN_OR_RETURN(worker, FindCustomWorkerProgram()); }
  config::VarLookup lookup = options.vars ? options.vars : config::ProcessVarLookup();
  std::string python = c.python_executable;
  if (python.empty()) python = lookup("MMIRAGE_PYTHON").value_or("");
  if (python.empty()) python = "python3";
  return std::vector<std::string>{python,       worker,         "--script", env->AbsolutePath(c.script_path),
                                  "--function", c.function_name};
}

Result<std::unique_ptr<OutputProcessor>> StartCustomProcessor(const config::Processor& p,
                                                              const CustomStartOptions& options,
                                                              std::vector<std::string>* warnings) {
  auto argv = CustomWorkerCommand(p.custom, options);
  if (!argv.ok()) return argv.status().WithContext(p.loc.ToString() + ": processor 'custom'");
  if (p.custom.start_method != "spawn") {
    warnings->push_back(p.loc.ToString() + ": processor 'custom': start_method '" + p.custom.start_method +
                        "' behaves as 'spawn' here: every worker is a fresh process");
  }
  auto pool = std::make_unique<CustomPool>(p, std::move(*argv));
  MMIRAGE_TRY(pool->Boot(options.boot_timeout_seconds));
  return std::unique_ptr<OutputProcessor>(std::move(pool));
}

}  // namespace mmirage::process::custom
