#include "batch/journal.h"

#include <cstdlib>

#include "data/json.h"
#include "util/parse_int.h"

namespace mmirage::batch {
namespace {

std::string Str(const Value& v, const char* k) {
  const Value* x = v.Find(k);
  return x && x->is_string() ? x->as_string() : "";
}
int64_t Int(const Value& v, const char* k) {
  const Value* x = v.Find(k);
  return x && x->is_int() ? x->as_int() : 0;
}

}  // namespace

Value JournalChunk::ToEvent() const {
  Value e = Value::EmptyObject();
  e.Set("event", "chunk");
  e.Set("name", name);
  e.Set("chunk_id", chunk_id);
  e.Set("modality", modality);
  e.Set("stage", stage);
  e.Set("file", file);
  e.Set("key", key);
  e.Set("hash", hash);
  e.Set("bytes", bytes);
  e.Set("oversized", oversized);
  e.Set("flush_reason", flush_reason);
  e.Set("snapshot", snapshot);
  Value reqs = Value::EmptyArray();
  for (const auto& r : requests) {
    Value a = Value::EmptyArray();
    a.Push(Value(r.custom_id));
    a.Push(Value(r.dataset));
    a.Push(Value(r.part));
    a.Push(Value(static_cast<int64_t>(r.row)));
    a.Push(Value(r.output));
    reqs.Push(a);
  }
  e.Set("requests", reqs);  // [custom_id, dataset, part, row, output]
  return e;
}

JournalChunk* BatchJournal::Find(const std::string& name) {
  for (auto& c : chunks_)
    if (c.name == name) return &c;
  return nullptr;
}

Status BatchJournal::Apply(const Value& e) {
  std::string ev = Str(e, "event");
  if (ev == "start") {
    const Value* f = e.Find("fingerprint");
    if (f && f->is_string()) fingerprint_ = ParseUint64(f->as_string()).value_or(0);  // 0: matches no config
    if (const Value* id = e.Find("identity")) identity_ = *id;
    journal_id_ = Str(e, "id");
  } else if (ev == "chunk") {
    JournalChunk c;
    c.name = Str(e, "name");
    c.chunk_id = Str(e, "chunk_id");
    c.modality = Str(e, "modality");
    c.stage = Int(e, "stage");
    c.file = Str(e, "file");
    c.key = Str(e, "key");
    c.hash = Str(e, "hash");
    c.bytes = Int(e, "bytes");
    const Value* o = e.Find("oversized");
    c.oversized = o && o->is_bool() && o->as_bool();
    c.flush_reason = Str(e, "flush_reason");
    if (const Value* s = e.Find("snapshot")) c.snapshot = *s;
    if (const Value* rs = e.Find("requests"); rs && rs->is_array()) {
      for (const Value& a : rs->as_array()) {
        if (!a.is_array() || a.size() != 5) return Status::Corruption("bad request entry");
        const auto& x = a.as_array();
        if (!x[0].is_string() || !x[1].is_int() || !x[2].is_int() || !x[3].is_int() || !x[4].is_int())
          return Status::Corruption("bad request entry");
        c.requests.push_back(JournalRequest{x[0].as_string(), x[1].as_int(), x[2].as_int(), x[4].as_int(),
                                            static_cast<uint64_t>(x[3].as_int())});
      }
    }
    if (Find(c.name) != nullptr) return Status::Corruption("chunk " + c.name + " journaled twice");
    chunks_.push_back(std::move(c));
  } else if (ev == "submitted" || ev == "receipt" || ev == "ended" || ev == "stored") {
    JournalChunk* c = Find(Str(e, "name"));
    if (c == nullptr) return Status::Corruption(ev + " event for an unknown chunk");
    if (ev == "submitted") {
      c->batch_id = Str(e, "batch_id");
      c->submit_status = Str(e, "status");
      c->submitted_at = Str(e, "at");
    } else if (ev == "receipt") {
      c->receipt = true;
    } else if (ev == "stored") {
      c->stored = true;
    } else {
      c->ended = Str(e, "status");
    }
  } else if (ev == "sealed") {
    sealed_.insert(Int(e, "stage"));
  } else if (ev == "cached") {
    if (Str(e, "file").empty()) return Status::Corruption("cached event without a file");
    cached_[Int(e, "stage")] = Str(e, "file");
  } else {
    return Status::Corruption("unknown event '" + ev + "'");
  }
  return Status::OK();
}

Result<std::unique_ptr<BatchJournal>> BatchJournal::Open(Env* env, const std::string& dir) {
  MMIRAGE_TRY(env->CreateDirs(dir));
  std::unique_ptr<BatchJournal> j(new BatchJournal(env, dir));
  std::string path = JoinPath(dir, "journal.jsonl");
  if (env->FileExists(path)) {
    MMIRAGE_ASSIGN_OR_RETURN(std::string text, env->ReadFileToString(path));
    size_t pos = 0, good_end = 0;
    int line_no = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      ++line_no;
      if (nl == std::string::npos) break;  // torn last line: never acted upon
      std::string_view line(text.data() + pos, nl - pos);
      auto v = ParseJson(line);
      Status s = v.ok() && v->is_object() ? j->Apply(*v) : Status::Corruption("not a JSON object");
      if (!s.ok()) return Status::Corruption(path + ":" + std::to_string(line_no) + ": " + s.message());
      pos = nl + 1;
      good_end = pos;
    }
    if (good_end < text.size()) MMIRAGE_TRY(env->TruncateFile(path, good_end));
  }
  MMIRAGE_ASSIGN_OR_RETURN(j->file_, env->NewWritableFile(path, /*append=*/true));
  return j;
}

Status BatchJournal::Append(const Value& event) {
  MMIRAGE_TRY(Apply(event));
  MMIRAGE_TRY(file_->Append(ToJson(event) + "\n"));
  return file_->Sync();
}

}  // namespace mmirage::batch
