#!/usr/bin/env bash
# Builds the unit tests with AddressSanitizer + UndefinedBehaviorSanitizer (GCC, a separate build dir:
# build-asan/) and runs them; non-zero on any failing test or sanitizer report. Expects scripts/setup.sh to have run
# (llama.cpp cache, test venv). llama.cpp itself is not rebuilt: the cached libraries are linked as they are.
# Which tests: every unit-test binary (tests/unit/<module>/) except engine_test and tools_test, which need a real
# model and llama-server in the loop (slow under ASan, and the engine is llama.cpp's code); in the others the
# SLURM tests (SlurmTest.*: the one SLURM of the machine) and the HTML report test (StatsHtmlTest.*: Chromium) are
# filtered out. The normal run covers all of those.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MMIRAGE_CACHE:-$HOME/.cache/mmirage}"
BUILD="$ROOT/build-asan"
# The llama.cpp that scripts/setup.sh configured the normal build with (the cache may hold several versions).
LLAMA_DIR="$(sed -n 's/^MMIRAGE_LLAMA_DIR:PATH=//p' "$ROOT/build/CMakeCache.txt" 2>/dev/null)"
[ -n "$LLAMA_DIR" ] || LLAMA_DIR="$(ls -d "$CACHE"/llama.cpp/*/ | head -1)"
log() { printf '[sanitize] %s\n' "$*" >&2; }

# The same llama.cpp (prebuilt or source) and Arrow as the main build that scripts/setup.sh configured.
SAME=()
for v in MMIRAGE_LLAMA_DIR MMIRAGE_LLAMA_MODE MMIRAGE_LLAMA_LIB_DIR MMIRAGE_LLAMA_BUILD_DIR MMIRAGE_ARROW_DIR; do
  val="$(sed -n "s/^$v:[A-Z]*=//p" "$ROOT/build/CMakeCache.txt" 2>/dev/null)"
  [ -z "$val" ] || SAME+=("-D$v=$val")
done

START=$(date +%s)
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# GCC's -Wmaybe-uninitialized is known to misfire under -fsanitize=address (GCC's manual says so); here it flags
# std::function moves inside libstdc++'s <regex>. The normal build keeps the warning (and -Werror).
WARN="-Wno-maybe-uninitialized"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMMIRAGE_LLAMA_DIR="${LLAMA_DIR%/}" "${SAME[@]}" \
  -DMMIRAGE_PYTHON="$ROOT/build/venv/bin/python" -DCMAKE_CXX_FLAGS="$SAN $WARN" -DCMAKE_C_FLAGS="$SAN" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  >/dev/null
# SANITIZE_TESTS="a_test b_test" narrows the set (e.g. for a quick local check).
read -r -a TESTS <<<"${SANITIZE_TESTS:-util_test data_test query_test template_test state_test stats_test cache_test config_test process_test pipeline_test batch_test exec_test regress_test}"
present=()
for t in "${TESTS[@]}"; do
  [ -d "$ROOT/tests/unit/${t%_test}" ] && present+=("$t")
done
cmake --build "$BUILD" -j "${MMIRAGE_JOBS:-$(nproc)}" --target "${present[@]}"
log "built in $(($(date +%s) - START)) s"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
failed=0
for t in "${present[@]}"; do
  log "$t"
  if ! (cd "$BUILD/tests" && "./$t" --gtest_brief=1 --gtest_filter='-SlurmTest.*:StatsHtmlTest.*' >"$BUILD/$t.log" 2>&1); then
    log "$t: FAILED (log: build-asan/$t.log)"
    grep -E "ERROR: AddressSanitizer|runtime error|SUMMARY|\[  FAILED  \]" "$BUILD/$t.log" | head -20 >&2 || true
    failed=1
  fi
done
log "done in $(($(date +%s) - START)) s: $([ "$failed" = 0 ] && echo "all ${#present[@]} test binaries clean" || echo FAILED)"
exit "$failed"
