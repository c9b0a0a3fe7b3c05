#include "pipeline/row_batches.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "data/hf_writer.h"
#include "data/json.h"
#include "util/signals.h"

namespace mmirage::pipeline {
namespace {

struct RawBatch {
  uint64_t seq = 0;
  std::string text;  // the rows' text, back to back
  struct Row {
    uint64_t index;
    uint64_t line;
    const std::string* file;
    size_t offset, length;
    size_t value;  // index into values for decoded (Arrow/Parquet) rows, else SIZE_MAX
  };
  std::vector<Row> rows;
  std::vector<Value> values;
};

// Shared state between reader, workers and the sink thread. All fields guarded by mu.
struct Channel {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<RawBatch> todo;
  std::map<uint64_t, ProcessedBatch> done;
  size_t in_flight = 0;  // batches read but not yet handed to the sink
  bool reader_finished = false;
  bool stop = false;
  Status reader_status;
  Status fatal;  // an exception in a worker: a fault of the program or the machine, not of a row; ends the run
};

}  // namespace

std::string UsageLine(uint64_t row_index, const RowUsage& u) {
  return "{\"row_index\":" + std::to_string(row_index) + ",\"prompt_tokens\":" + std::to_string(u.prompt_tokens) +
         ",\"completion_tokens\":" + std::to_string(u.completion_tokens) +
         ",\"generations\":" + std::to_string(u.generations) +
         ",\"cached_generations\":" + std::to_string(u.cached_generations) + "}\n";
}

void ProcessRow(const RowTransform& transform, uint64_t row_index, const std::string& file, uint64_t line,
                std::string_view text, ProcessedBatch* out) {
  auto fail = [&](RowError e) {
    out->failures.push_back({row_index, file + ":" + std::to_string(line), std::move(e)});
  };
  if (transform.ExtractsFromJson()) {  // the row's own columns are not needed: no Value tree of the row
    auto vars = transform.ExtractFromJson(text);
    if (!vars.ok) return fail(std::move(vars.error));
    static const Value kNoColumns = Value::EmptyObject();  // remove_columns: the output keeps none of the row's
    auto rendered = transform.RenderOutputJson(kNoColumns, vars.value, &out->lines);
    if (!rendered.ok) return fail(std::move(rendered.error));
    out->lines.push_back('\n');
    ++out->rows;
    return;
  }
  auto row = ParseJson(text);
  if (!row.ok()) return fail(RowError{Stage::kRead, row.status().message()});
  ProcessRowValue(transform, row_index, file, line, *row, out);
}

void ProcessRowValue(const RowTransform& transform, uint64_t row_index, const std::string& file, uint64_t line,
                     const Value& row, ProcessedBatch* out) {
  auto fail = [&](RowError e) {
    out->failures.push_back({row_index, file + ":" + std::to_string(line), std::move(e)});
  };
  if (!row.is_object()) {
    return fail(RowError{Stage::kRead, std::string("row is a JSON ") + row.TypeName() + ", expected an object"});
  }
  auto vars = transform.Extract(row);
  if (!vars.ok) return fail(std::move(vars.error));
  auto rendered = transform.RenderOutputJson(row, vars.value, &out->lines);
  if (!rendered.ok) return fail(std::move(rendered.error));
  out->lines.push_back('\n');
  ++out->rows;
}

namespace {

constexpr size_t kMaxBatchBytes = 32u << 20;  // a batch also ends at 32 MiB of row data (big rows, e.g. images)

// Reads rows into *b until it holds `batch_rows` rows or kMaxBatchBytes, the stream ends or a stop is requested;
// *full: it ended on a limit (more rows may follow). Errors: the stream's (*b keeps the rows read before).
Status FillBatch(RowStream* stream, size_t batch_rows, RawBatch* b, bool* full) {
  RawRow raw;
  size_t value_bytes = 0;  // decoded rows' data
  auto has_room = [&] { return b->rows.size() < batch_rows && b->text.size() + value_bytes < kMaxBatchBytes; };
  while (has_room() && !StopRequested()) {
    MMIRAGE_ASSIGN_OR_RETURN(bool more, stream->Next(&raw));
    if (!more) break;
    size_t vi = SIZE_MAX;
    if (raw.value != nullptr) {
      vi = b->values.size();
      value_bytes += static_cast<size_t>(ApproxBytes(*raw.value));
      b->values.push_back(std::move(*raw.value));
    }
    b->rows.push_back({raw.index, raw.line, raw.file, b->text.size(), raw.text.size(), vi});
    b->text.append(raw.text);
  }
  *full = !has_room();
  return Status::OK();
}

// The reader thread: cuts the stream into batches numbered in input order, with at most `max_in_flight` in
// flight, until the stream ends, fails (ch->reader_status) or the run stops; then sets ch->reader_finished.
void ReadBatches(RowStream* stream, size_t batch_rows, size_t max_in_flight, Channel* ch) {
  uint64_t seq = 0;
  while (true) {
    RawBatch b;
    b.seq = seq;
    bool full = false;
    Status s = FillBatch(stream, batch_rows, &b, &full);
    std::unique_lock<std::mutex> l(ch->mu);
    if (!s.ok()) ch->reader_status = s;
    if (!b.rows.empty() && s.ok()) {
      ch->cv.wait(l, [&] { return ch->in_flight < max_in_flight || ch->stop; });
      if (ch->stop) break;
      ++ch->in_flight;
      ch->todo.push_back(std::move(b));
      ++seq;
    }
    if (!s.ok() || !full || ch->stop) break;
    ch->cv.notify_all();
  }
  std::lock_guard<std::mutex> l(ch->mu);
  ch->reader_finished = true;
  ch->cv.notify_all();
}

// The rows of batch `b` processed into *out. No exception may leave a worker thread (it would terminate the
// process). Data errors arrive as values, so whatever is thrown (a bug, memory exhausted) is not the row's failure
// and is not recorded as one: the error is kInternal naming the row.
Status ProcessBatch(const RowTransform& transform, const RawBatch& b, ProcessedBatch* out) {
  out->lines.reserve(b.text.size() + b.text.size() / 2);
  for (const auto& r : b.rows) {
    try {
      if (r.value != SIZE_MAX) {
        ProcessRowValue(transform, r.index, *r.file, r.line, b.values[r.value], out);
      } else {
        ProcessRow(transform, r.index, *r.file, r.line, std::string_view(b.text).substr(r.offset, r.length), out);
      }
    } catch (const std::exception& e) {
      return Status::Internal(*r.file + ":" + std::to_string(r.line) + ": internal error: " + e.what());
    }
  }
  return Status::OK();
}

// A worker thread: processes batches until none is left or the run stops. An error (ProcessBatch's) becomes
// ch->fatal, the first one kept, and stops the run.
void ProcessBatches(const RowTransform& transform, Channel* ch) {
  while (true) {
    RawBatch b;
    {
      std::unique_lock<std::mutex> l(ch->mu);
      ch->cv.wait(l, [&] { return !ch->todo.empty() || ch->reader_finished || ch->stop; });
      if (ch->stop || (ch->todo.empty() && ch->reader_finished)) return;
      b = std::move(ch->todo.front());
      ch->todo.pop_front();
    }
    ProcessedBatch out;
    Status s = ProcessBatch(transform, b, &out);
    std::lock_guard<std::mutex> l(ch->mu);
    if (!s.ok()) {
      if (ch->fatal.ok()) ch->fatal = s;
      ch->stop = true;
      ch->cv.notify_all();
      return;
    }
    ch->done.emplace(b.seq, std::move(out));
    ch->cv.notify_all();
  }
}

// The caller's thread: hands the processed batches to `sink` in input order until every batch is handed over, a
// worker fails (ch->fatal) or the sink fails; returns the sink's error (and stops the run then).
Status DeliverInOrder(Channel* ch, const std::function<Status(ProcessedBatch&)>& sink) {
  uint64_t next = 0;
  while (true) {
    std::optional<ProcessedBatch> batch;
    {
      std::unique_lock<std::mutex> l(ch->mu);
      ch->cv.wait(l, [&] {
        return ch->done.count(next) > 0 || (ch->reader_finished && ch->in_flight == 0) || !ch->fatal.ok();
      });
      if (!ch->fatal.ok()) return Status::OK();
      auto it = ch->done.find(next);
      if (it == ch->done.end()) return Status::OK();  // reader finished and everything was handed over
      batch = std::move(it->second);
      ch->done.erase(it);
    }
    Status s = sink(*batch);
    std::lock_guard<std::mutex> l(ch->mu);
    --ch->in_flight;
    ++next;
    ch->cv.notify_all();
    if (!s.ok()) {
      ch->stop = true;
      return s;
    }
  }
}

}  // namespace

Status RunRowBatches(RowStream* stream, const RowTransform& transform, const RowBatchOptions& options,
                     const std::function<Status(ProcessedBatch&)>& sink) {
  int threads = options.threads > 0 ? options.threads
                                    : static_cast<int>(std::min(8u, std::max(1u, std::thread::hardware_concurrency())));
  size_t max_in_flight = options.max_in_flight > 0 ? options.max_in_flight : static_cast<size_t>(4 * threads);
  Channel ch;
  std::thread reader([&] { ReadBatches(stream, options.batch_rows, max_in_flight, &ch); });
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back([&] { ProcessBatches(transform, &ch); });
  Status result = DeliverInOrder(&ch, sink);
  {
    std::lock_guard<std::mutex> l(ch.mu);
    ch.stop = true;
    ch.cv.notify_all();
  }
  reader.join();
  for (auto& w : workers) w.join();
  if (result.ok()) result = ch.fatal;
  if (result.ok()) result = ch.reader_status;
  return result;
}

}  // namespace mmirage::pipeline
