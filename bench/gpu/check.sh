#!/usr/bin/env bash
# One prepared GPU check for a lent machine (one H200, CUDA nvcc, CMake, ninja, Python; no internet, nothing of
# ours installed). Run from the repository root with build-gpu-carry/ (bench/gpu/prepare.sh) carried along:
#
#   bench/gpu/check.sh [all|build|measure]   # CUDA, the ~4B synthetic model (preset medium, F16), 64 and 256 seqs
#
# `build` (steps 1-2) and `measure` (1, 3-6) split the run in two commands when one would pass a per-command
# limit; `measure` reuses what `build` left in GPU_CHECK_DIR and the build dir.
#
# Steps (each fails fast with one line "GPU-CHECK FAIL: <step>: <why>"; results are printed as they come):
#   1. tools present; 2. llama.cpp from the carried source with GGML_CUDA (MMIRAGE_CUDA_ARCHS, default 90) and
#   mmirage, mmirage-make-test-model, mmirage-bench-raw-llama, llama-server through scripts/setup.sh;
#   3. a synthetic model on the device; then for each parallelism P:
#   4. raw libllama batched decoding (build/mmirage-bench-raw-llama), 5. `mmirage run --stats` on the embedded
#   engine, 6. the same through llama-server (backend: llama-server, the OpenAI engine): output tok/s, ratio to
#   raw, GPU utilisation and gpu_days_per_billion_tokens from `mmirage stats`.
#
# Knobs (for the CPU rehearsal: GPU_CHECK_MODE=cpu GPU_CHECK_PRESET=tiny GPU_CHECK_PARALLEL="4 8"):
#   GPU_CHECK_MODE cuda|cpu, GPU_CHECK_PRESET (medium), GPU_CHECK_PARALLEL ("64 256"), GPU_CHECK_ROWS_PER_SEQ (4),
#   GPU_CHECK_MAX_NEW (256), GPU_CHECK_DIR (/tmp/mmirage-gpu-check), GPU_CHECK_STEP_TIMEOUT (420 s per step),
#   GPU_CHECK_CACHE (llama.cpp cache; default inside GPU_CHECK_DIR), GPU_CHECK_BUILD_DIR (build-gpu-check),
#   GPU_CHECK_THREADS (CPU threads of both engines),
#   MMIRAGE_CUDA_ARCHS, MMIRAGE_JOBS.
set -uo pipefail
PHASE="${1:-all}"
case "$PHASE" in all|build|measure) ;; *) echo "usage: bench/gpu/check.sh [all|build|measure]" >&2; exit 2 ;; esac
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
MODE="${GPU_CHECK_MODE:-cuda}"
PRESET="${GPU_CHECK_PRESET:-medium}"
PARALLEL="${GPU_CHECK_PARALLEL:-64 256}"
ROWS_PER_SEQ="${GPU_CHECK_ROWS_PER_SEQ:-4}"
MAX_NEW="${GPU_CHECK_MAX_NEW:-256}"
W="${GPU_CHECK_DIR:-/tmp/mmirage-gpu-check}"
STEP_TIMEOUT="${GPU_CHECK_STEP_TIMEOUT:-540}"
CACHE="${GPU_CHECK_CACHE:-$W/cache}"
BUILD="${GPU_CHECK_BUILD_DIR:-$ROOT/build-gpu-check}"
CARRY="$ROOT/build-gpu-carry"
THREADS="${GPU_CHECK_THREADS:-}"   # CPU threads for both engines (default: each engine's own)
LLAMA_KEY="3.21.1-80fb11a"
T0=$(date +%s)
say() { printf '[gpu-check %4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
fail() { printf 'GPU-CHECK FAIL: %s\n' "$*" >&2; exit 1; }
# Runs a step with a time limit, output in $LOG (logs/NN.log); on failure prints the end of it and stops.
NSTEP=0 LOG=""
step() {
  local name="$1"; shift
  NSTEP=$((NSTEP + 1)); LOG="$W/logs/$(printf %02d "$NSTEP").log"; local log="$LOG"
  say "$name ... (log $log)"
  local rc=0
  timeout "$STEP_TIMEOUT" "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    tail -15 "$log" | sed 's/^/    | /'
    [ "$rc" = 124 ] && fail "$name: timed out after ${STEP_TIMEOUT}s (log $log)"
    fail "$name: exit $rc (log $log)"
  fi
}
mkdir -p "$W/logs" || fail "setup: cannot create $W"
case "$MODE" in cuda|cpu) ;; *) fail "setup: GPU_CHECK_MODE must be cuda or cpu, got '$MODE'" ;; esac

# ---- 1. tools -------------------------------------------------------------------------------------------------------
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
for t in cmake ninja g++ python3 timeout; do command -v "$t" >/dev/null || fail "tools: '$t' is not on PATH"; done
if [ "$MODE" = cuda ]; then
  command -v nvcc >/dev/null || fail "tools: nvcc not found (PATH or /usr/local/cuda/bin)"
  command -v nvidia-smi >/dev/null || fail "tools: nvidia-smi not found"
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader \
    | sed 's/^/[gpu-check] GPU: /' || fail "tools: nvidia-smi cannot query the GPU"
  say "nvcc: $(nvcc --version | tail -2 | head -1)"
  if [ -z "${MMIRAGE_CUDA_ARCHS:-}" ]; then
    cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')"
    export MMIRAGE_CUDA_ARCHS="${cap:-90}"
  fi
  say "CUDA architectures: $MMIRAGE_CUDA_ARCHS"
fi
say "cmake $(cmake --version | head -1 | grep -oE '[0-9.]+$'), ninja $(ninja --version), $(g++ --version | head -1), $(nproc) cores"

# ---- 2. builds --------------------------------------------------------------------------------------------------------
if [ "$PHASE" != measure ]; then
LLAMA_DIR="$CACHE/llama.cpp/$LLAMA_KEY"
if [ ! -f "$LLAMA_DIR/src/include/llama.h" ]; then
  [ -f "$CARRY/llama-src.tar.gz" ] || fail "source: no llama.cpp at $LLAMA_DIR/src and no $CARRY/llama-src.tar.gz (run bench/gpu/prepare.sh and carry build-gpu-carry)"
  mkdir -p "$LLAMA_DIR/src" && tar xzf "$CARRY/llama-src.tar.gz" -C "$LLAMA_DIR/src" || fail "source: cannot unpack llama-src.tar.gz"
fi
ARROW_DIR="$CACHE/arrow/26.0.1"
if [ ! -f "$ARROW_DIR/.complete" ]; then
  [ -f "$CARRY/arrow.tar.gz" ] || fail "arrow: no Arrow C++ at $ARROW_DIR and no $CARRY/arrow.tar.gz (run bench/gpu/prepare.sh)"
  mkdir -p "$ARROW_DIR" && tar xzf "$CARRY/arrow.tar.gz" -C "$ARROW_DIR" && touch "$ARROW_DIR/.complete" \
    || fail "arrow: cannot unpack arrow.tar.gz"
fi
# mmirage's build dependencies: the machine's own, or the carried Debian packages when one is missing.
missing=""
for h in yaml-cpp/yaml.h simdjson.h CLI/CLI.hpp mimalloc.h curl/curl.h zstd.h zlib.h png.h jpeglib.h webp/decode.h \
         openssl/sha.h; do
  found=0
  for inc in /usr/include /usr/include/x86_64-linux-gnu /usr/local/include; do [ -e "$inc/$h" ] && found=1; done
  [ "$found" = 1 ] || missing+=" $h"
done
command -v pkg-config >/dev/null || missing+=" pkg-config"
if [ -n "$missing" ] || [ "${GPU_CHECK_FORCE_CARRIED_DEPS:-0}" = 1 ]; then
  D="$W/deps"
  if [ ! -d "$D/usr/include" ]; then
    [ -f "$CARRY/deps.tar.gz" ] || fail "deps: missing$missing and no carried $CARRY/deps.tar.gz (run bench/gpu/prepare.sh)"
    mkdir -p "$D" && tar xzf "$CARRY/deps.tar.gz" -C "$D" || fail "deps: cannot unpack deps.tar.gz"
  fi
  say "using the carried Debian packages (missing here:${missing:- none, forced})"
  export PATH="$D/usr/bin:$PATH"
  export CMAKE_PREFIX_PATH="$D/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export PKG_CONFIG_PATH="$D/usr/lib/x86_64-linux-gnu/pkgconfig:$D/usr/share/pkgconfig"
  export PKG_CONFIG_SYSROOT_DIR="$D"
  export LD_LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LDFLAGS="-Wl,-rpath-link,$D/usr/lib/x86_64-linux-gnu -Wl,-rpath,$D/usr/lib/x86_64-linux-gnu"
fi
GPU_ENV=(MMIRAGE_GPU=none)
[ "$MODE" = cuda ] && GPU_ENV=(MMIRAGE_GPU=cuda)
step "build llama.cpp + mmirage + llama-server (scripts/setup.sh)" env "${GPU_ENV[@]}" MMIRAGE_LLAMA=source \
  MMIRAGE_CACHE="$CACHE" MMIRAGE_BUILD_DIR="$BUILD" MMIRAGE_SKIP_APT=1 MMIRAGE_SKIP_MODEL=1 \
  MMIRAGE_CMAKE_ARGS="-DBUILD_TESTING=OFF" scripts/setup.sh --with-server
step "build the model tool and the raw baseline" cmake --build "$BUILD" -j "${MMIRAGE_JOBS:-$(nproc)}" \
  --target mmirage-make-test-model mmirage-bench-raw-llama
for b in mmirage mmirage-make-test-model mmirage-bench-raw-llama llama-server; do
  [ -x "$BUILD/$b" ] || fail "build: $BUILD/$b missing"
done
if [ "$MODE" = cuda ]; then
  ls "$CACHE"/llama.cpp/$LLAMA_KEY/build-v2-cuda-*/ggml/src/ggml-cuda/libggml-cuda.a >/dev/null 2>&1 \
    || fail "build: llama.cpp was built without its CUDA backend"
fi
say "built: $BUILD/mmirage ($MODE)"
fi
[ "$PHASE" = build ] && { say "GPU-CHECK BUILD OK"; exit 0; }
for b in mmirage mmirage-make-test-model mmirage-bench-raw-llama llama-server; do
  [ -x "$BUILD/$b" ] || fail "measure: $BUILD/$b missing (run bench/gpu/check.sh build first)"
done
[ -d "$W/deps/usr/lib/x86_64-linux-gnu" ] && export LD_LIBRARY_PATH="$W/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# ---- 3. the synthetic model -----------------------------------------------------------------------------------------
MODEL="$W/model-$PRESET.gguf"
LOG=/dev/null
if [ ! -f "$MODEL" ]; then
  step "write the synthetic $PRESET model" "$BUILD/mmirage-make-test-model" --out "$MODEL.tmp" --preset "$PRESET"
  mv "$MODEL.tmp" "$MODEL"
fi
if [ "$LOG" = /dev/null ]; then say "model: $MODEL (made by an earlier run)"; else say "model: $(tail -1 "$LOG")"; fi

# ---- 4-6. per parallelism: raw, embedded, llama-server ----------------------------------------------------------
py() { python3 - "$@"; }
write_inputs() {  # $1 dir, $2 rows: data.jsonl (rows) and prompts.jsonl (the same texts, for the raw loop)
  py "$1" "$2" <<'PY'
import json, os, sys
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
with open(os.path.join(d, "data.jsonl"), "w") as f, open(os.path.join(d, "prompts.jsonl"), "w") as g:
    for i in range(n):
        t = f"Rewrite sentence number {i} in a formal tone: the capital of country {i} is city {i}."
        f.write(json.dumps({"text": t}) + "\n"); g.write(json.dumps(t) + "\n")
PY
}
write_config() {  # $1 dir, $2 backend, $3 parallel
  cat >"$1/cfg-$2.yaml" <<EOF
processors:
  - type: llm
    backend: $2
    server_args:
      model_path: $MODEL
      extra_engine_args: {max_running_requests: $3, context_length: 1024${THREADS:+, n_threads: $THREADS}}
    default_sampling_params: {temperature: 0, max_new_tokens: $MAX_NEW, ignore_eos: true}
loading_params:
  datasets: [{type: JSONL, path: $1/data.jsonl, output_dir: $1/out-$2}]
  state_dir: $1/state-$2
  batch_size: $3
processing_params:
  inputs: [{name: text, key: text}]
  outputs: [{name: answer, type: llm, prompt: "{{ text }}"}]
  remove_columns: true
  output_schema: {answer: "{{ answer }}"}
EOF
}
# Prints "tok/s util gpu_days" of a finished run from its status.json and `mmirage stats`.
run_figures() {  # $1 dir, $2 backend
  "$BUILD/mmirage" stats --config "$1/cfg-$2.yaml" --format json >"$1/stats-$2.json" 2>>"$W/logs/stats.log" \
    || fail "stats: mmirage stats failed for $2 (see $W/logs/stats.log)"
  py "$1/state-$2/shard_0/status.json" "$1/stats-$2.json" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))["stats"]
agg = json.load(open(sys.argv[2])).get("aggregate", {})
tps = st["output_tokens"] / st["inference_runtime_seconds"]
def f(v, fmt): return "n/a" if v is None else fmt % v
print(f"{tps:.1f} {f(st.get('gpu_util_mean'), '%.1f')} {f(agg.get('gpu_days_per_billion_tokens'), '%.3f')} "
      f"{st['output_tokens']} {st.get('num_gpus')}")
PY
}
SUMMARY=()
for P in $PARALLEL; do
  D="$W/p$P"; rows=$((P * ROWS_PER_SEQ))
  rm -rf "$D"; write_inputs "$D" "$rows" || fail "inputs: cannot write $D"
  step "P=$P raw libllama loop ($rows prompts x $MAX_NEW tokens)" "$BUILD/mmirage-bench-raw-llama" --model "$MODEL" \
    --prompts "$D/prompts.jsonl" --parallel "$P" --max-new-tokens "$MAX_NEW" --ctx-seq 1024 ${THREADS:+--threads $THREADS}
  raw="$(py "$LOG" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
print(json.loads(lines[-1])["output_tok_per_s"])
PY
)" || fail "P=$P raw: no result line"
  say "P=$P raw libllama: $raw output tok/s"
  for backend in llama llama-server; do
    write_config "$D" "$backend" "$P"
    if [ "$backend" = llama-server ]; then
      # Soft: llama-server parses every chat answer and returns HTTP 500 when the random model's text does not
      # parse (seen on CPU with 256 new tokens, with the model's template, a plain one and --no-jinja alike); the
      # embedded figures must not be lost to that.
      if ! ( step "P=$P mmirage run --stats, backend $backend" "$BUILD/mmirage" run --config "$D/cfg-$backend.yaml" \
               --stats --progress log ); then
        NSTEP=$((NSTEP + 1)); SOFT_FAILED=1
        say "P=$P llama-server: that failure is not fatal; going on without its figure"
        SUMMARY+=("P=$P  llama-server  FAILED (log $W/logs/$(printf %02d "$NSTEP").log)")
        continue
      fi
      NSTEP=$((NSTEP + 1)); LOG="$W/logs/$(printf %02d "$NSTEP").log"
    else
      step "P=$P mmirage run --stats, backend $backend" "$BUILD/mmirage" run --config "$D/cfg-$backend.yaml" --stats \
        --progress log
    fi
    figures="$(run_figures "$D" "$backend")" || fail "P=$P $backend: no figures"
    read -r tps util days toks ngpu <<<"$figures"
    ratio="$(py "$tps" "$raw" <<<'import sys; print(f"{float(sys.argv[1]) / float(sys.argv[2]):.3f}")')"
    say "P=$P $backend: $tps output tok/s ($toks tokens) | ratio to raw $ratio | GPU util ${util}% (GPUs $ngpu) | gpu_days_per_billion_tokens $days"
    SUMMARY+=("P=$P  $(printf '%-13s' "$backend") $tps tok/s  raw $raw  ratio $ratio  util $util%  gpu_days/B $days")
  done
done
say "summary ($MODE, preset $PRESET, $MAX_NEW new tokens per row, goal: embedded >= 5000 tok/s on an H200, both >= 0.97 of raw):"
printf '    %s\n' "${SUMMARY[@]}"
[ "${SOFT_FAILED:-0}" = 0 ] || { say "GPU-CHECK PARTIAL: a llama-server step failed (above)"; exit 3; }
say "GPU-CHECK OK"
