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
};

}  // namespace

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

Status RunRowBatches(RowStream* stream, const RowTransform& transform, const RowBatchOptions& options,
                     const std::function<Status(ProcessedBatch&)>& sink) {
  int threads = options.threads > 0 ? options.threads
                                    : static_cast<int>(std::min(8u, std::max(1u, std::thread::hardware_concurrency())));
  size_t max_in_flight = options.max_in_flight > 0 ? options.max_in_flight : static_cast<size_t>(4 * threads);
  Channel ch;

  std::thread reader([&] {
    uint64_t seq = 0;
    while (true) {
      RawBatch b;
      b.seq = seq;
      RawRow raw;
      Status s;
      size_t value_bytes = 0;  // decoded rows' data: a batch also ends at 32 MiB (big rows, e.g. images)
      while (b.rows.size() < options.batch_rows && b.text.size() + value_bytes < (32u << 20) && !StopRequested()) {
        auto more = stream->Next(&raw);
        if (!more.ok()) {
          s = more.status();
          break;
        }
        if (!*more) break;
        size_t vi = SIZE_MAX;
        if (raw.value != nullptr) {
          vi = b.values.size();
          value_bytes += static_cast<size_t>(ApproxBytes(*raw.value));
          b.values.push_back(std::move(*raw.value));
        }
        b.rows.push_back({raw.index, raw.line, raw.file, b.text.size(), raw.text.size(), vi});
        b.text.append(raw.text);
      }
      std::unique_lock<std::mutex> l(ch.mu);
      if (!s.ok()) ch.reader_status = s;
      bool last = !s.ok() || (b.rows.size() < options.batch_rows && b.text.size() + value_bytes < (32u << 20));
      if (!b.rows.empty() && s.ok()) {
        ch.cv.wait(l, [&] { return ch.in_flight < max_in_flight || ch.stop; });
        if (ch.stop) break;
        ++ch.in_flight;
        ch.todo.push_back(std::move(b));
        ++seq;
      }
      if (last || ch.stop) {
        ch.reader_finished = true;
        ch.cv.notify_all();
        break;
      }
      ch.cv.notify_all();
    }
    std::lock_guard<std::mutex> l(ch.mu);
    ch.reader_finished = true;
    ch.cv.notify_all();
  });

  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      while (true) {
        RawBatch b;
        {
          std::unique_lock<std::mutex> l(ch.mu);
          ch.cv.wait(l, [&] { return !ch.todo.empty() || ch.reader_finished || ch.stop; });
          if (ch.stop || (ch.todo.empty() && ch.reader_finished)) return;
          b = std::move(ch.todo.front());
          ch.todo.pop_front();
        }
        ProcessedBatch out;
        out.lines.reserve(b.text.size() + b.text.size() / 2);
        for (const auto& r : b.rows) {
          // No exception may leave a worker thread (it would terminate the process): the engines report data
          // errors as values, and anything else thrown (an allocation failure on hostile data) fails the row.
          try {
            if (r.value != SIZE_MAX) {
              ProcessRowValue(transform, r.index, *r.file, r.line, b.values[r.value], &out);
            } else {
              ProcessRow(transform, r.index, *r.file, r.line, std::string_view(b.text).substr(r.offset, r.length),
                         &out);
            }
          } catch (const std::exception& e) {
            out.failures.push_back({r.index, *r.file + ":" + std::to_string(r.line),
                                    RowError{Stage::kRenderOutput, std::string("internal error: ") + e.what()}});
          }
        }
        std::lock_guard<std::mutex> l(ch.mu);
        ch.done.emplace(b.seq, std::move(out));
        ch.cv.notify_all();
      }
    });
  }

  // Sink: hand batches over in order.
  Status result;
  uint64_t next = 0;
  while (true) {
    std::optional<ProcessedBatch> batch;
    {
      std::unique_lock<std::mutex> l(ch.mu);
      ch.cv.wait(l, [&] {
        return ch.done.count(next) > 0 || (ch.reader_finished && ch.in_flight == 0);
      });
      auto it = ch.done.find(next);
      if (it == ch.done.end()) break;  // reader finished and everything was handed over
      batch = std::move(it->second);
      ch.done.erase(it);
    }
    Status s = sink(*batch);
    std::lock_guard<std::mutex> l(ch.mu);
    --ch.in_flight;
    ++next;
    ch.cv.notify_all();
    if (!s.ok()) {
      result = s;
      ch.stop = true;
      break;
    }
  }
  {
    std::lock_guard<std::mutex> l(ch.mu);
    ch.stop = true;
    ch.cv.notify_all();
  }
  reader.join();
  for (auto& w : workers) w.join();
  if (result.ok()) result = ch.reader_status;
  return result;
}

}  // namespace mmirage::pipeline
