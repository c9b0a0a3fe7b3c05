// The journal form of output rows that are converted to Arrow/Parquet when a shard is published: JSON, except that
// a bytes value is written as the string "\u0000b64:<base64>" (plain JSON writes bytes as a bare base64 string,
// which a reader cannot tell from text). UntagBytes turns such strings back into bytes values, so binary and HF
// Image columns survive the JSONL journal. No real text starts with a NUL character followed by "b64:".
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "data/value.h"

namespace mmirage {

// As AppendJson, with bytes values tagged (the JsonWriteOptions::Bytes::kTagged preset of the one writer).
void AppendJsonTagged(const Value& v, std::string* out);

// Replaces tagged strings anywhere in *v by bytes values. Returns false (leaving *v partly restored) when a tagged
// string is not valid base64.
bool UntagBytes(Value* v);

}  // namespace mmirage
