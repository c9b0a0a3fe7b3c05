#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang + ASan + UBSan, in build-fuzz/) and runs each one on its seed corpus
# (fuzz/corpus/<name>/) for FUZZ_SECONDS seconds (default 30: the CI smoke). New inputs go to a scratch corpus, the
# seeds in the repo are never rewritten. Non-zero on any crash, leak, timeout or sanitizer report; the crashing
# input is kept under build-fuzz/artifacts/. Usage: scripts/fuzz.sh [fuzzer-name...]   (default: all of them)
# scripts/test.sh (and so CI) runs it after the normal tests. fuzz/corpus/fuzz_arrow/ is written by our own writer
# (build-fuzz/make_arrow_seeds fuzz/corpus/fuzz_arrow).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_EACH="${FUZZ_SECONDS:-30}"
CLANG_VERSION=19
log() { printf '[fuzz] %s\n' "$*" >&2; }

# Debian's clang and its libFuzzer runtime.
if ! command -v "clang++-$CLANG_VERSION" >/dev/null 2>&1 || \
   ! ls /usr/lib/llvm-$CLANG_VERSION/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  log "installing clang-$CLANG_VERSION and libclang-rt-$CLANG_VERSION-dev"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "clang-$CLANG_VERSION" "libclang-rt-$CLANG_VERSION-dev" >/dev/null
fi

BUILD="$ROOT/build-fuzz"
# The Arrow that scripts/setup.sh configured the normal build with (MMIRAGE_CACHE may point anywhere).
ARROW=()
ARROW_DIR="$(sed -n 's/^MMIRAGE_ARROW_DIR:[A-Z]*=//p' "$ROOT/build/CMakeCache.txt" 2>/dev/null)"
[ -z "$ARROW_DIR" ] || ARROW=("-DMMIRAGE_ARROW_DIR=$ARROW_DIR")
cmake -S "$ROOT/fuzz" -B "$BUILD" -G Ninja -DCMAKE_C_COMPILER="clang-$CLANG_VERSION" \
  -DCMAKE_CXX_COMPILER="clang++-$CLANG_VERSION" "${ARROW[@]}" >/dev/null
cmake --build "$BUILD" -j "${MMIRAGE_JOBS:-$(nproc)}"

START=$(date +%s)
names=("$@")
if ((${#names[@]} == 0)); then
  for d in "$ROOT"/fuzz/corpus/*/; do names+=("$(basename "$d")"); done
fi
mkdir -p "$BUILD/artifacts"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:symbolize=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
failed=0
for name in "${names[@]}"; do
  scratch="$(mktemp -d)"
  log "$name: ${SECONDS_EACH}s on fuzz/corpus/$name"
  if "$BUILD/$name" -max_total_time="$SECONDS_EACH" -timeout=20 -rss_limit_mb=2560 -max_len=16384 \
       -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$name-" "$scratch" "$ROOT/fuzz/corpus/$name" \
       >"$BUILD/$name.log" 2>&1; then
    log "$name: ok, $(grep -h 'stat::number_of_executed_units' "$BUILD/$name.log" | awk '{print $2}') executions," \
        "$(grep -h 'stat::average_exec_per_sec' "$BUILD/$name.log" | awk '{print $2}') exec/s"
  else
    log "$name: FAILED (log: build-fuzz/$name.log)"
    grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$BUILD/$name.log" | head -20 >&2 || true
    failed=1
  fi
  rm -rf "$scratch"
done
log "done in $(($(date +%s) - START)) s (after the build)"
exit "$failed"
