#include "pipeline/stream_scheduler.h"

#include <chrono>
#include <algorithm>
#include <condition_variable>
#include <optional>
#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include "data/json.h"
#include "pipeline/dispatch_queue.h"
#include "util/signals.h"

namespace mmirage::pipeline {
namespace {

struct RowState {
  uint64_t row_index = 0;
  std::string source;  // FILE:LINE
  Value row;
  Value vars;
  size_t next_output = 0;
  RowUsage usage;                     // over the row's generations, retries included
  std::vector<std::string> warnings;  // caveats of successful generations (errors.jsonl warnings)
};

// A finished row: its serialised line, or its failure.
struct Finished {
  bool ok = true;
  std::string line;
  ProcessedBatch::Failure failure;
  std::string usage;  // the row's usage line ("" when it made no generation)
  std::vector<ProcessedBatch::Failure> warnings;
};

// The row's usage line; "" when it made no generation.
std::string UsageLineOf(const RowState& st) {
  return st.usage.generations == 0 ? "" : UsageLine(st.row_index, st.usage);
}

struct Event {
  uint64_t seq;
  process::GenerateResult result;
};

// Where the generator's completions are posted. Each callback holds a reference, so that one that runs after
// RunStreaming has returned (a row abandoned on an error, ended later by the generator's owner) finds it alive.
struct Mailbox {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Event> events;  // guarded by mu
};

class Scheduler {
 public:
  Scheduler(RowStream* stream, const RowTransform& transform, process::OutputGenerator* gen,
            const StreamOptions& options, const std::function<Status(ProcessedBatch&)>& sink, StreamTotals* totals)
      : stream_(stream),
        transform_(transform),
        gen_(gen),
        options_(options),
        sink_(sink),
        totals_(totals),
        queue_(options.prefix_order ? DispatchQueue::Order::kPrefix : DispatchQueue::Order::kInput) {}

  Status Run() {
    std::optional<std::chrono::steady_clock::time_point> stop_deadline;
    while (true) {
      if (!stop_deadline && StopRequested()) {
        exhausted_ = true;  // read no more rows
        stop_deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(options_.stop_grace_seconds * 1000));
      }
      MMIRAGE_TRY(Admit());
      Dispatch();
      MMIRAGE_TRY(Flush(false));
      if (active_.empty()) {
        if (exhausted_) break;
        continue;  // every admitted row finished without a generation: read more
      }
      std::deque<Event> events;
      {
        std::unique_lock<std::mutex> l(mail_->mu);
        auto ready = [&] { return !mail_->events.empty(); };
        if (stop_deadline) {
          if (!mail_->cv.wait_until(l, *stop_deadline, ready)) {
            l.unlock();
            MMIRAGE_TRY(Flush(true));  // the finished prefix only: rows still in flight are abandoned
            return Status::Unavailable("interrupted");
          }
        } else {
          mail_->cv.wait_for(l, std::chrono::milliseconds(200), ready);  // wakes up to notice a stop request
        }
        events.swap(mail_->events);
      }
      for (auto& e : events) OnGenerated(e.seq, std::move(e.result));
      if (!fatal_.ok()) return fatal_;
      Dispatch();  // e.g. a custom processor's tripped circuit breaker: the shard fails
    }
    MMIRAGE_TRY(Flush(true));
    if (stop_deadline) return Status::Unavailable("interrupted");
    return totals_->budget_reached ? Status::Unavailable("cost budget reached") : Status::OK();
  }

  // After an error: the generations still in flight are abandoned (their completions, whenever the generator's
  // owner ends them, go to the mailbox unread) and no longer count as in flight.
  void Abandon() {
    totals_->in_flight -= pending_;
    pending_ = 0;
  }

 private:
  // Reads rows while the window has room and starts their first output.
  Status Admit() {
    while (!exhausted_ && next_seq_ - next_to_sink_ < options_.window) {
      const RowGate gate = options_.may_start_row ? options_.may_start_row() : RowGate::kStart;
      if (gate == RowGate::kWait && !active_.empty()) break;
      if (gate == RowGate::kStop) {
        exhausted_ = true;
        totals_->budget_reached = true;
        break;
      }
      RawRow raw;
      MMIRAGE_ASSIGN_OR_RETURN(bool more, stream_->Next(&raw));
      if (!more) {
        exhausted_ = true;
        break;
      }
      uint64_t seq = next_seq_++;
      RowState st;
      st.row_index = raw.index;
      st.source = *raw.file + ":" + std::to_string(raw.line);
      Result<Value> row = raw.value != nullptr ? Result<Value>(std::move(*raw.value)) : ParseJson(raw.text);
      if (!row.ok()) {
        Fail(seq, st, RowError{Stage::kRead, row.status().message()});
        continue;
      }
      if (!row->is_object()) {
        Fail(seq, st, RowError{Stage::kRead, std::string("row is a JSON ") + row->TypeName() + ", expected an object"});
        continue;
      }
      auto vars = transform_.Extract(*row);
      if (!vars.ok) {
        Fail(seq, st, vars.error);
        continue;
      }
      st.row = std::move(*row);
      st.vars = std::move(vars.value);
      Advance(seq, std::move(st));
    }
    return Status::OK();
  }

  // Starts the row's next output, or renders the row when every output is known.
  void Advance(uint64_t seq, RowState st) {
    const auto& outputs = transform_.outputs();
    if (st.next_output < outputs.size()) {
      auto prompt = transform_.RenderPrompt(st.next_output, st.vars);
      if (!prompt.ok) return Fail(seq, st, prompt.error);
      queue_.Push(DispatchQueue::Item{seq, st.next_output, std::move(prompt.value)});
      active_[seq] = std::move(st);
      if (!options_.prefix_order) Dispatch();
      return;
    }
    Finished f;
    auto out = transform_.RenderOutputJson(st.row, st.vars, &f.line);
    if (!out.ok) return Fail(seq, st, out.error);
    f.line.push_back('\n');
    f.usage = UsageLineOf(st);
    for (auto& w : st.warnings)
      f.warnings.push_back(ProcessedBatch::Failure{st.row_index, st.source, RowError{Stage::kGenerate, std::move(w)}});
    finished_.emplace(seq, std::move(f));
    active_.erase(seq);
  }

  uint64_t st_row_index(uint64_t seq) const { return active_.at(seq).row_index; }

  // Sends waiting generations: all of them in input order; in prefix order while fewer than dispatch_limit are in
  // flight (the rest wait, so that the next free slot takes the prompt nearest the last one sent).
  void Dispatch() {
    const int64_t limit = static_cast<int64_t>(std::max<size_t>(1, options_.dispatch_limit));
    while (!queue_.empty() && (!options_.prefix_order || pending_ < limit)) {
      DispatchQueue::Item item = queue_.Pop();
      uint64_t seq = item.seq;
      ++pending_;
      ++totals_->generations;
      ++totals_->in_flight;
      process::RowInfo info{st_row_index(seq), static_cast<int64_t>(st_row_index(seq)) + options_.sample_offset};
      gen_->Generate(item.output, std::move(item.prompt), active_[seq].vars, info,
                     [mail = mail_, seq](process::GenerateResult r) {
                       std::lock_guard<std::mutex> l(mail->mu);
                       mail->events.push_back(Event{seq, std::move(r)});
                       mail->cv.notify_one();
                     });
    }
  }

  void OnGenerated(uint64_t seq, process::GenerateResult r) {
    --pending_;
    --totals_->in_flight;
    totals_->prompt_tokens += r.prompt_tokens;
    totals_->completion_tokens += r.completion_tokens;
    totals_->cached_generations += r.cached_generations;
    totals_->cached_prompt_tokens += r.cached_prompt_tokens;
    totals_->cached_completion_tokens += r.cached_completion_tokens;
    totals_->engine_cached_prompt_tokens += r.engine_cached_prompt_tokens;
    auto it = active_.find(seq);
    if (it == active_.end()) return;
    RowState st = std::move(it->second);
    active_.erase(it);
    st.usage.prompt_tokens += r.prompt_tokens;
    st.usage.completion_tokens += r.completion_tokens;
    st.usage.generations += r.attempts;
    st.usage.cached_generations += r.cached_generations;
    if (r.fatal && !r.status.ok()) {
      if (fatal_.ok()) fatal_ = r.status.WithContext(st.source);
      return;
    }
    for (auto& w : r.warnings)
      st.warnings.push_back("output '" + transform_.outputs()[st.next_output].name + "': " + std::move(w));
    if (!r.status.ok()) return Fail(seq, st, RowError{Stage::kGenerate, r.status.message()});
    st.vars.Set(transform_.outputs()[st.next_output].name, std::move(r.value));
    ++st.next_output;
    Advance(seq, std::move(st));
  }

  void Fail(uint64_t seq, const RowState& st, RowError e) {
    Finished f;
    f.ok = false;
    f.failure = ProcessedBatch::Failure{st.row_index, st.source, std::move(e)};
    f.usage = UsageLineOf(st);
    finished_.emplace(seq, std::move(f));
    active_.erase(seq);
  }

  // Hands the finished rows at the head of the order to the sink.
  Status Flush(bool final) {
    while (true) {
      size_t ready = 0;
      for (auto it = finished_.begin(); it != finished_.end() && it->first == next_to_sink_ + ready; ++it) ++ready;
      if (ready == 0 ||
          (!final && ready < options_.flush_rows && !exhausted_ && next_seq_ - next_to_sink_ < options_.window))
        return Status::OK();
      ProcessedBatch b;
      for (size_t i = 0; i < ready && i < options_.flush_rows; ++i) {
        auto it = finished_.begin();
        b.usage += it->second.usage;
        if (it->second.ok) {
          b.lines += it->second.line;
          ++b.rows;
          for (auto& w : it->second.warnings) b.warnings.push_back(std::move(w));
        } else {
          b.failures.push_back(std::move(it->second.failure));
        }
        finished_.erase(it);
        ++next_to_sink_;
      }
      MMIRAGE_TRY(sink_(b));
    }
  }

  RowStream* stream_;
  const RowTransform& transform_;
  process::OutputGenerator* gen_;
  StreamOptions options_;
  const std::function<Status(ProcessedBatch&)>& sink_;
  StreamTotals* totals_;

  uint64_t next_seq_ = 0;      // rows read so far
  uint64_t next_to_sink_ = 0;  // rows handed to the sink so far
  bool exhausted_ = false;
  std::map<uint64_t, RowState> active_;    // rows waiting for a generation
  std::map<uint64_t, Finished> finished_;  // reorder buffer

  std::shared_ptr<Mailbox> mail_ = std::make_shared<Mailbox>();
  int64_t pending_ = 0;  // generations submitted and not yet consumed
  Status fatal_;         // the first fatal generation error (ends the run)
  DispatchQueue queue_;  // generations rendered and not yet sent (their rows are in active_)
};

}  // namespace

Status RunStreaming(RowStream* stream, const RowTransform& transform, process::OutputGenerator* generator,
                    const StreamOptions& options, const std::function<Status(ProcessedBatch&)>& sink,
                    StreamTotals* totals) {
  Scheduler s(stream, transform, generator, options, sink, totals);
  Status st = s.Run();
  if (!st.ok()) s.Abandon();  // the generator is borrowed: its owner decides when they end (Shutdown)
  return st;
}

}  // namespace mmirage::pipeline
