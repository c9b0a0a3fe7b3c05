#include "exec/merge.h"

#include <algorithm>
#include <map>
#include <cstdio>
#include <random>

#include "data/json.h"
#include "data/dataset.h"
#include "data/hf_writer.h"
#include "data/output_reader.h"
#include "pipeline/shard_writer.h"
#include "util/hex.h"
#include "util/log.h"
#include "util/parse_int.h"
#include "util/path_safety.h"

namespace mmirage::exec {
namespace {

// The id of a shard directory "shard_<digits>"; nullopt for any other name (work directories `*.tmp.*`, an id
// beyond int64: not one of ours).
std::optional<int64_t> ShardNumber(const std::string& name) {
  if (name.rfind("shard_", 0) != 0) return std::nullopt;
  return ParseNonNegativeInt64(std::string_view(name).substr(6));
}

// Resolves symlinks of the longest existing prefix of `path` and appends the rest.
std::string ResolvePath(Env* env, const std::string& path) {
  std::string abs = env->AbsolutePath(path);
  std::string head = abs, tail;
  while (!head.empty() && head != "/" && !env->FileExists(head)) {
    tail = "/" + Basename(head) + tail;
    head = Dirname(head);
  }
  auto real = env->RealPath(head);
  return (real.ok() ? *real : head) + tail;
}

bool IsAncestor(const std::string& a, const std::string& b) {  // a is a strict ancestor of b
  if (a == "/") return b != "/";
  return b.size() > a.size() && b.compare(0, a.size(), a) == 0 && b[a.size()] == '/';
}

struct ShardContent {
  int64_t id;
  std::string dir;
  std::vector<std::string> splits;  // empty = single table
  OutputFormat format = OutputFormat::kJsonl;
};

const char* FormatName(OutputFormat f) {
  return f == OutputFormat::kHf ? "hf" : f == OutputFormat::kParquet ? "parquet" : "jsonl";
}

// The output format of one table directory (a shard, or one split of it); kNotFound when it holds no data.
Result<OutputFormat> TableFormat(Env* env, const std::string& dir) {
  // hf and parquet first: a shard published just before a crash may still hold its journaled data.jsonl beside
  // them (removed by the next run), never the other way round.
  if (env->IsRegularFile(JoinPath(dir, "state.json"))) return OutputFormat::kHf;
  if (env->IsRegularFile(JoinPath(dir, "data.parquet"))) return OutputFormat::kParquet;
  if (env->IsRegularFile(JoinPath(dir, "data.jsonl"))) return OutputFormat::kJsonl;
  return Status::NotFound("no data.jsonl, state.json or data.parquet in " + dir);
}

Result<int64_t> CopyLines(Env* env, const std::string& from, WritableFile* to, int64_t* rows) {
  MMIRAGE_ASSIGN_OR_RETURN(auto reader, LineReader::Open(env, from));
  std::string_view line;
  int64_t n = 0;
  std::string buf;
  while (true) {
    MMIRAGE_ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) break;
    if (IsBlankLine(line)) continue;
    buf.assign(line);
    buf.push_back('\n');
    MMIRAGE_TRY(to->Append(buf));
    ++n;
  }
  if (rows) *rows += n;
  return n;
}

// Lines of errors.jsonl that are failed rows (not warnings about written rows, "level":"warning"), and all lines.
Status CountErrorLines(Env* env, const std::string& path, int64_t* failed, int64_t* lines) {
  MMIRAGE_ASSIGN_OR_RETURN(auto reader, LineReader::Open(env, path));
  std::string_view line;
  while (true) {
    MMIRAGE_ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) break;
    if (IsBlankLine(line)) continue;
    ++*lines;
    if (line.find("\"level\":\"warning\"") == std::string_view::npos) ++*failed;
  }
  return Status::OK();
}

// Whether the table directory `dir` holds a row. JSONL: reads up to its first non-blank line only (the copy counts
// the rows), so that a big shard is not read once more just to be counted — on object storage that is a download.
Result<bool> TableHasRows(Env* env, const std::string& dir) {
  MMIRAGE_ASSIGN_OR_RETURN(OutputFormat format, TableFormat(env, dir));
  if (format == OutputFormat::kJsonl) {
    MMIRAGE_ASSIGN_OR_RETURN(auto reader, LineReader::Open(env, JoinPath(dir, "data.jsonl")));
    std::string_view line;
    while (true) {
      MMIRAGE_ASSIGN_OR_RETURN(bool more, reader->Next(&line));
      if (!more) return false;
      if (!IsBlankLine(line)) return true;
    }
  }
  MMIRAGE_ASSIGN_OR_RETURN(auto parts, ResolveOutputParts(env, dir));
  for (const auto& p : parts) {
    MMIRAGE_ASSIGN_OR_RETURN(uint64_t k, CountRows(env, p));
    if (k > 0) return true;
  }
  return false;
}

Status CopyFile(Env* env, const std::string& from, const std::string& to) {
  MMIRAGE_ASSIGN_OR_RETURN(auto in, env->NewSequentialFile(from));
  MMIRAGE_ASSIGN_OR_RETURN(auto out, env->NewWritableFile(to));
  std::string buf(1 << 20, '\0');
  while (true) {
    MMIRAGE_ASSIGN_OR_RETURN(size_t n, in->Read(buf.size(), buf.data()));
    if (n == 0) break;
    MMIRAGE_TRY(out->Append(std::string_view(buf.data(), n)));
  }
  MMIRAGE_TRY(out->Sync());
  return out->Close();
}

// Merges the table directories `tables` (shards, or one split of each) into `out_dir`, in the tables' format.
// jsonl: lines copied as bytes. hf: when every table has the same features, their Arrow files are hard-linked (or
// copied) into `out_dir` and listed in one state.json; otherwise (a column typed differently in some shard, e.g.
// null everywhere there) the rows are re-encoded with one type inferred over all of them. parquet: re-encoded.
Status MergeTable(Env* env, const std::vector<std::string>& tables, const std::string& out_dir, OutputFormat format,
                  int64_t* rows) {
  if (format == OutputFormat::kJsonl) {
    MMIRAGE_ASSIGN_OR_RETURN(auto out, env->NewWritableFile(JoinPath(out_dir, "data.jsonl")));
    for (const auto& t : tables) MMIRAGE_TRY(CopyLines(env, JoinPath(t, "data.jsonl"), out.get(), rows).status());
    MMIRAGE_TRY(out->Sync());
    return out->Close();
  }
  std::vector<DatasetPart> parts;
  for (const auto& t : tables) {
    MMIRAGE_ASSIGN_OR_RETURN(auto p, ResolveOutputParts(env, t));
    for (auto& x : p) parts.push_back(std::move(x));
  }
  if (format == OutputFormat::kHf) {
    bool same = true;
    Value features;
    for (size_t i = 0; i < tables.size() && same; ++i) {
      auto f = ReadHfFeatures(env, tables[i]);
      if (!f.ok()) return f.status();
      if (i == 0) features = *f;
      else same = ToJson(*f) == ToJson(features);
    }
    if (same) {
      size_t total = 0;
      for (const auto& p : parts) total += p.files.size();
      std::vector<std::string> names;
      char name[64];
      for (const auto& p : parts) {
        for (const auto& f : p.files) {
          std::snprintf(name, sizeof name, "data-%05zu-of-%05zu.arrow", names.size(), total);
          std::string to = JoinPath(out_dir, name);
          Status ln = env->LinkFile(f, to);
          if (ln.IsUnavailable()) ln = CopyFile(env, f, to);
          MMIRAGE_TRY(ln);
          names.push_back(name);
        }
        MMIRAGE_ASSIGN_OR_RETURN(uint64_t n, CountRows(env, p));
        *rows += static_cast<int64_t>(n);
      }
      return WriteHfDatasetFiles(env, out_dir, names, features);
    }
  }
  auto source = PartsRowSource(env, std::move(parts));
  MMIRAGE_ASSIGN_OR_RETURN(int64_t n, WriteArrowOutput(env, source.get(), out_dir, format));
  *rows += n;
  return Status::OK();
}

// Whether the file ends in '\n' (an empty file does not). Reads its last byte only.
Result<bool> EndsInNewline(Env* env, const std::string& path) {
  MMIRAGE_ASSIGN_OR_RETURN(uint64_t size, env->GetFileSize(path));
  if (size == 0) return false;
  MMIRAGE_ASSIGN_OR_RETURN(auto in, env->NewSequentialFile(path));
  MMIRAGE_TRY(in->Skip(size - 1));
  char last = 0;
  MMIRAGE_ASSIGN_OR_RETURN(size_t n, in->Read(1, &last));
  return n == 1 && last == '\n';
}

// Links (on object storage: copies server-side) the data.jsonl of `shard` into `out_dir` when that is provably what
// CopyLines would write: a single table published by mmirage (its `_mmirage.json` counts the rows; the shard writer
// writes one row per line, no blank line) that ends in '\n'. Adds its rows to *rows. false: not provable, or the
// Env cannot link; the caller copies the lines. Saves moving the whole output through the process twice.
Result<bool> LinkPublishedJsonl(Env* env, const ShardContent& shard, const std::string& out_dir, int64_t* rows) {
  if (!shard.splits.empty() || shard.format != OutputFormat::kJsonl) return false;
  if (Basename(shard.dir) != "shard_" + std::to_string(shard.id)) return false;  // e.g. shard_07
  std::optional<pipeline::CompletedShard> done = pipeline::ReadCompletedShard(env, Dirname(shard.dir), shard.id);
  if (!done || done->rows_written <= 0) return false;
  const std::string from = JoinPath(shard.dir, "data.jsonl");
  MMIRAGE_ASSIGN_OR_RETURN(bool newline_end, EndsInNewline(env, from));
  if (!newline_end) return false;
  Status ln = env->LinkFile(from, JoinPath(out_dir, "data.jsonl"));
  if (ln.IsUnavailable()) return false;
  MMIRAGE_TRY(ln);
  *rows += done->rows_written;
  return true;
}

std::string RandomSuffix() {
  std::mt19937_64 rng{std::random_device{}()};
  return Hex64(rng());
}

// Shard directories to merge: (shard id, directory), in merge order.
using Candidates = std::vector<std::pair<int64_t, std::string>>;

// Refuses a missing input directory (kNotFound) and an output that is the input or contains it (kInvalidArgument:
// publishing would delete the input).
Status CheckMergePaths(Env* env, const std::string& input_dir, const std::string& output_dir) {
  if (!env->IsDirectory(input_dir))
    return Status::NotFound("dataset_dir does not exist or is not a directory: " + input_dir);
  std::string in_real = ResolvePath(env, input_dir), out_real = ResolvePath(env, output_dir);
  if (in_real == out_real)
    return Status::InvalidArgument("Unsafe merge output path: output_dir equals dataset_dir (" + out_real + ")");
  if (IsAncestor(out_real, in_real))
    return Status::InvalidArgument("Unsafe merge output path: output_dir contains dataset_dir (" + out_real +
                                   " contains " + in_real + ")");
  return Status::OK();
}

// The directories of exactly `ids`, in that order. Errors: kNotFound listing the ids without a directory.
Result<Candidates> RequestedShards(Env* env, const std::string& input_dir, const std::vector<int64_t>& ids) {
  Candidates candidates;
  std::vector<std::string> missing;
  for (int64_t id : ids) {
    std::string d = JoinPath(input_dir, "shard_" + std::to_string(id));
    if (!env->IsDirectory(d)) missing.push_back(std::to_string(id));
    else candidates.emplace_back(id, d);
  }
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    return Status::NotFound("missing shard output(s) in " + input_dir + ": shard " + list);
  }
  return candidates;
}

// Every shard_<n> directory of rep->input_dir in numeric order; those with n >= options.num_shards are left out
// (listed in rep, with a warning). Errors: two directories of one shard id (shard_7 and shard_07).
Result<Candidates> ScannedShards(Env* env, const MergeOptions& options, MergeReport* rep) {
  Candidates candidates;
  MMIRAGE_ASSIGN_OR_RETURN(auto children, env->GetChildren(rep->input_dir));
  for (const auto& c : children) {
    auto id = ShardNumber(c);
    std::string d = JoinPath(rep->input_dir, c);
    if (!id || !env->IsDirectory(d)) continue;
    if (options.num_shards && *id >= *options.num_shards) {
      rep->ignored_beyond_num_shards.push_back(*id);
      continue;
    }
    candidates.emplace_back(*id, d);
  }
  std::sort(candidates.begin(), candidates.end());
  for (size_t i = 1; i < candidates.size(); ++i) {  // never merge a shard twice
    if (candidates[i].first == candidates[i - 1].first)
      return Status::InvalidArgument(candidates[i - 1].second + " and " + candidates[i].second + " are both shard " +
                                     std::to_string(candidates[i].first) + "; remove one");
  }
  if (!rep->ignored_beyond_num_shards.empty()) {
    std::sort(rep->ignored_beyond_num_shards.begin(), rep->ignored_beyond_num_shards.end());
    std::string list;
    for (int64_t id : rep->ignored_beyond_num_shards) list += (list.empty() ? "" : ", ") + std::to_string(id);
    LOG_WARN("Ignoring stale shard folder(s) " << list << " in " << rep->input_dir << ": beyond num_shards="
                                               << *options.num_shards << " (left over from an earlier run?)");
  }
  return candidates;
}

// What shard directory `dir` holds (format, splits), and in *has_rows whether any of its tables holds a row;
// nullopt when it holds no data table. Errors: a corrupt dataset_dict.json, a split without data, splits in
// different formats, reading.
Result<std::optional<ShardContent>> InspectShard(Env* env, int64_t id, const std::string& dir, bool* has_rows) {
  ShardContent sc{id, dir, {}};
  *has_rows = false;
  std::string dd = JoinPath(dir, "dataset_dict.json");
  if (!env->FileExists(dd)) {
    auto fmt = TableFormat(env, dir);
    if (!fmt.ok()) return std::optional<ShardContent>();
    sc.format = *fmt;
    MMIRAGE_ASSIGN_OR_RETURN(*has_rows, TableHasRows(env, dir));
    return std::optional<ShardContent>(std::move(sc));
  }
  MMIRAGE_ASSIGN_OR_RETURN(std::string text, env->ReadFileToString(dd));
  auto v = ParseJson(text);
  const Value* splits = v.ok() ? v->Find("splits") : nullptr;
  if (splits == nullptr || !splits->is_array()) return Status::Corruption(dd + ": invalid dataset_dict.json");
  for (const auto& s : splits->as_array()) {
    std::string why = s.is_string() ? UnsafePathComponent(s.as_string()) : "is not a string";
    if (!why.empty()) return Status::Corruption(dd + ": invalid split name " + ToJson(s) + " (" + why + ")");
    sc.splits.push_back(s.as_string());
    std::string sd = JoinPath(dir, s.as_string());
    auto fmt = TableFormat(env, sd);
    if (!fmt.ok()) return Status::NotFound("missing split data: " + fmt.status().message());
    if (sc.splits.size() > 1 && *fmt != sc.format)
      return Status::InvalidArgument(dir + ": splits in different output formats");
    sc.format = *fmt;
    if (!*has_rows) { MMIRAGE_ASSIGN_OR_RETURN(*has_rows, TableHasRows(env, sd)); }
  }
  return std::optional<ShardContent>(std::move(sc));
}

// The candidates that hold rows, in order; those without data or rows are counted in rep, and the lines of every
// inspected shard's errors.jsonl in rep->error_rows (failed rows) and *error_lines (all). Errors: InspectShard's;
// no shard with rows (kNotFound); single tables mixed with split maps, or formats mixed (kInvalidArgument).
Result<std::vector<ShardContent>> SelectShards(Env* env, const Candidates& candidates, MergeReport* rep,
                                               int64_t* error_lines) {
  std::vector<ShardContent> shards;
  for (const auto& [id, dir] : candidates) {
    bool has_rows = false;
    MMIRAGE_ASSIGN_OR_RETURN(std::optional<ShardContent> sc, InspectShard(env, id, dir, &has_rows));
    if (!sc) {
      ++rep->skipped_invalid;
      continue;
    }
    std::string ef = JoinPath(dir, "errors.jsonl");
    if (env->FileExists(ef)) { MMIRAGE_TRY(CountErrorLines(env, ef, &rep->error_rows, error_lines)); }
    if (!has_rows) {
      ++rep->skipped_zero_rows;
      continue;
    }
    shards.push_back(std::move(*sc));
  }
  if (shards.empty()) {
    return Status::NotFound("No non-empty shards found in " + rep->input_dir +
                            ". empty/invalid dirs: " + std::to_string(rep->skipped_invalid) +
                            ", zero-row datasets: " + std::to_string(rep->skipped_zero_rows) + ".");
  }
  bool split_map = !shards[0].splits.empty();
  for (const auto& s : shards) {
    if (s.splits.empty() == split_map)
      return Status::InvalidArgument("Cannot merge mix of Dataset and DatasetDict shards.");
    if (s.format != shards[0].format)
      return Status::InvalidArgument("Cannot merge shards of different output formats: " + shards[0].dir + " is " +
                                     FormatName(shards[0].format) + ", " + s.dir + " is " + FormatName(s.format));
  }
  return shards;
}

// Writes the merged data into `tmp`: one table, or for split maps one directory per split name (the sorted union)
// and dataset_dict.json. Adds the rows written to *rows. REQUIRES: shards agree (SelectShards).
Status WriteMergedTables(Env* env, const std::vector<ShardContent>& shards, const std::string& tmp, int64_t* rows) {
  const OutputFormat format = shards[0].format;
  if (shards.size() == 1) {
    MMIRAGE_ASSIGN_OR_RETURN(bool linked, LinkPublishedJsonl(env, shards[0], tmp, rows));
    if (linked) return Status::OK();
  }
  if (shards[0].splits.empty()) {
    std::vector<std::string> tables;
    for (const auto& s : shards) tables.push_back(s.dir);
    return MergeTable(env, tables, tmp, format, rows);
  }
  std::map<std::string, int> names;  // sorted union
  for (const auto& s : shards)
    for (const auto& sp : s.splits) names[sp] = 1;
  Value list = Value::EmptyArray();
  for (const auto& [name, _] : names) {
    list.Push(name);
    MMIRAGE_TRY(env->CreateDirs(JoinPath(tmp, name)));
    std::vector<std::string> tables;
    for (const auto& s : shards) {
      if (std::find(s.splits.begin(), s.splits.end(), name) == s.splits.end()) continue;
      tables.push_back(JoinPath(s.dir, name));
    }
    MMIRAGE_TRY(MergeTable(env, tables, JoinPath(tmp, name), format, rows));
    MMIRAGE_TRY(env->SyncDir(JoinPath(tmp, name)));
  }
  Value dd = Value::EmptyObject();
  dd.Set("splits", list);
  return WriteFileAtomically(env, JoinPath(tmp, "dataset_dict.json"), ToJson(dd) + "\n");
}

// Side files, concatenated in shard order into `tmp` when any candidate has one: failed rows (errors.jsonl, only
// when some shard has a line) and per-row token usage (usage.jsonl). Each is synced.
Status WriteSideFiles(Env* env, const Candidates& candidates, int64_t error_lines, const std::string& tmp) {
  for (const char* side : {"errors.jsonl", "usage.jsonl"}) {
    bool any = false;
    for (const auto& [id, dir] : candidates) any = any || env->FileExists(JoinPath(dir, side));
    if (!any || (std::string(side) == "errors.jsonl" && error_lines == 0)) continue;
    MMIRAGE_ASSIGN_OR_RETURN(auto out, env->NewWritableFile(JoinPath(tmp, side)));
    for (const auto& [id, dir] : candidates) {
      std::string ef = JoinPath(dir, side);
      if (env->FileExists(ef)) MMIRAGE_TRY(CopyLines(env, ef, out.get(), nullptr).status());
    }
    MMIRAGE_TRY(out->Sync());
    MMIRAGE_TRY(out->Close());
  }
  return Status::OK();
}

// Publishes the written directory `tmp` as `output_dir` (durability order as a shard's, see
// pipeline/shard_writer.h): the parent is synced after the swap and before the previous output is deleted. On
// error the caller removes `tmp`.
Status PublishMergedDir(Env* env, const std::string& tmp, const std::string& output_dir) {
  // Every file in tmp was synced; then the directory is.
  MMIRAGE_TRY(env->SyncDir(tmp));
  const std::string parent = Dirname(output_dir);
  if (!env->FileExists(output_dir)) {
    MMIRAGE_TRY(env->RenameFile(tmp, output_dir));
    return env->SyncDir(parent);
  }
  Status ex = env->ExchangeFiles(tmp, output_dir);
  if (ex.ok()) {
    MMIRAGE_TRY(env->SyncDir(parent));
    MMIRAGE_TRY(env->RemoveAll(tmp));  // the previous output
    return env->SyncDir(parent);
  }
  if (!ex.IsUnavailable()) return ex;
  // No atomic exchange: the previous output moves aside (a `.tmp.` name, ignored by readers) until the new
  // one is in place.
  const std::string aside = tmp + ".old";
  MMIRAGE_TRY(env->RemoveAll(aside));
  MMIRAGE_TRY(env->RenameFile(output_dir, aside));
  MMIRAGE_TRY(env->RenameFile(tmp, output_dir));
  MMIRAGE_TRY(env->SyncDir(parent));
  MMIRAGE_TRY(env->RemoveAll(aside));
  return env->SyncDir(parent);
}

}  // namespace

bool HasShardDirs(Env* env, const std::string& dir) {
  auto children = env->GetChildren(dir);
  if (!children.ok()) return false;
  for (const auto& c : *children) {
    if (ShardNumber(c) && env->IsDirectory(JoinPath(dir, c))) return true;
  }
  return false;
}

std::string MergeReport::Summary() const {
  return "Merged dataset " + dataset_name + ": shards=" + std::to_string(shards_used) +
         " rows=" + std::to_string(rows) + " output=" + output_dir +
         " skipped=" + std::to_string(skipped_invalid + skipped_zero_rows) +
         " (invalid=" + std::to_string(skipped_invalid) + ", zero_rows=" + std::to_string(skipped_zero_rows) + ")" +
         (error_rows > 0
              ? " failed_rows=" + std::to_string(error_rows) + " (see " + JoinPath(output_dir, "errors.jsonl") + ")"
              : "");
}

Result<MergeReport> MergeDatasetDir(Env* env, const std::string& input_dir, const std::string& output_dir,
                                    const MergeOptions& options) {
  MergeReport rep;
  rep.input_dir = env->AbsolutePath(input_dir);
  rep.output_dir = env->AbsolutePath(output_dir);
  rep.dataset_name = Basename(rep.input_dir);
  MMIRAGE_TRY(CheckMergePaths(env, rep.input_dir, rep.output_dir));
  Candidates candidates;
  if (options.shard_ids) {
    MMIRAGE_ASSIGN_OR_RETURN(candidates, RequestedShards(env, rep.input_dir, *options.shard_ids));
  } else {
    MMIRAGE_ASSIGN_OR_RETURN(candidates, ScannedShards(env, options, &rep));
  }
  if (candidates.empty()) return Status::NotFound("No shard_* folders found in " + rep.input_dir + ".");
  int64_t error_lines = 0;  // failed rows and warnings
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<ShardContent> shards, SelectShards(env, candidates, &rep, &error_lines));

  // Write into a temporary sibling, then publish.
  MMIRAGE_TRY(CreateDirsDurably(env, Dirname(rep.output_dir)));
  std::string tmp =
      rep.output_dir + ".tmp." + env->Hostname() + "." + std::to_string(env->Pid()) + "." + RandomSuffix();
  MMIRAGE_TRY(env->RemoveAll(tmp));
  MMIRAGE_TRY(env->CreateDirs(tmp));
  Status s = WriteMergedTables(env, shards, tmp, &rep.rows);
  if (s.ok()) s = WriteSideFiles(env, candidates, error_lines, tmp);
  if (s.ok()) s = PublishMergedDir(env, tmp, rep.output_dir);
  if (!s.ok()) {
    (void)env->RemoveAll(tmp);
    return s;
  }
  rep.shards_used = static_cast<int64_t>(shards.size());
  return rep;
}

}  // namespace mmirage::exec
