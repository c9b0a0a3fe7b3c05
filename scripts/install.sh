#!/usr/bin/env bash
# Relocatable install of the built mmirage (scripts/setup.sh builds it), for machines that have none of our Debian
# packages, e.g. a cluster's compute nodes reading a shared file system:
#
#   scripts/install.sh --prefix P [--tarball] [--no-server] [--build-dir B]
#
#   P/bin/mmirage                 RUNPATH $ORIGIN/../lib
#   P/lib/*.so*                   every shared library mmirage needs that is not part of glibc (yaml-cpp, simdjson,
#                                 mimalloc, curl and its dependencies, libstdc++, llama.cpp's libraries and its
#                                 per-CPU-family backends when it is the shared build), each with RUNPATH $ORIGIN,
#                                 and mmirage's shared modules (libmmirage_*.so, loaded on first use)
#   P/lib/cpu-native/             llama.cpp's CPU backend built for the build machine's CPU (libggml-cpu.so and
#                                 cpu-flags), used on machines whose CPU has all those flags
#   P/bin/llama-server            llama.cpp's OpenAI-compatible server (for `backend: llama-server`), beside
#                                 mmirage where it looks for it; built by setup.sh --with-server if missing
#   P/share/mmirage/              the `custom` processor's worker program (custom_worker.py, found relative to
#                                 bin/mmirage), the Ray job driver (ray_driver.py) and examples/ (the quickstart configs)
#
# --tarball also writes mmirage-<version>-linux-x86_64.tar.gz (one top folder of that name) next to P.
# The bundle needs only glibc (2.34 or newer) and the kernel: moved anywhere, it still finds its libraries.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="" TARBALL=0 SERVER=1 BUILD="$ROOT/build"
usage() { sed -n '2,18p' "$0" >&2; exit 2; }
while (($#)); do
  case "$1" in
    --prefix) PREFIX="${2:-}"; shift 2 || usage ;;
    --prefix=*) PREFIX="${1#*=}"; shift ;;
    --build-dir) BUILD="${2:-}"; shift 2 || usage ;;
    --tarball) TARBALL=1; shift ;;
    --no-server) SERVER=0; shift ;;
    -h|--help) usage ;;
    *) echo "install.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[ -n "$PREFIX" ] || { echo "install.sh: --prefix P is required" >&2; usage; }
log() { printf '[install] %s\n' "$*" >&2; }
die() { printf '[install] error: %s\n' "$*" >&2; exit 1; }

command -v patchelf >/dev/null 2>&1 || {
  log "installing patchelf (Debian package)"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq patchelf >/dev/null || die "cannot install patchelf"
}
[ -x "$BUILD/mmirage" ] || die "$BUILD/mmirage is not built; run scripts/setup.sh first"
if [ "$SERVER" = 1 ] && [ ! -x "$BUILD/llama-server" ]; then
  log "llama-server is not built; building it (scripts/setup.sh --with-server)"
  "$ROOT/scripts/setup.sh" --with-server
fi

VERSION="$("$BUILD/mmirage" --version 2>/dev/null | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -1)"
[ -n "$VERSION" ] || die "cannot read the version from $BUILD/mmirage --version"
mkdir -p "$PREFIX"
PREFIX="$(cd "$PREFIX" && pwd)"
rm -rf "$PREFIX/bin" "$PREFIX/lib" "$PREFIX/share/mmirage"
mkdir -p "$PREFIX/bin" "$PREFIX/lib" "$PREFIX/share/mmirage"

# glibc's own libraries (and the loader) are the base system, like the GPU driver; everything else travels with
# the bundle.
is_glibc() {
  case "$(basename "$1")" in
    linux-vdso.so*|ld-linux*.so*|libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*|libutil.so*|\
    libanl.so*|libnsl.so*|libBrokenLocale.so*|libmvec.so*|libcrypt.so*) return 0 ;;
    libcuda.so*|libnvidia-*.so*) return 0 ;;   # the NVIDIA driver's own: always the node's
    *) return 1 ;;
  esac
}
# Copies every non-glibc library that $1 resolves to into lib/ (ldd lists the whole closure).
copy_deps() {
  local line name path
  while read -r line; do
    case "$line" in *"=> not found"*) die "$1 needs ${line%% *}, which is not found" ;; esac
    name="${line%% *}"; path="$(sed -n 's/.*=> \(\/[^ ]*\) (.*/\1/p' <<<"$line")"
    [ -n "$path" ] || continue
    is_glibc "$name" && continue
    [ -e "$PREFIX/lib/$name" ] || cp -L "$path" "$PREFIX/lib/$name"
  done < <(env -u LD_LIBRARY_PATH ldd "$1")
}

install -m 755 "$BUILD/mmirage" "$PREFIX/bin/mmirage"
copy_deps "$BUILD/mmirage"
# The shared modules (libmmirage_*.so: Arrow/Parquet, the embedded engine, libcurl), loaded by mmirage on first use
# from the lib/ beside its bin/, and the libraries they link.
for f in "$BUILD"/lib/libmmirage_*.so; do
  [ -f "$f" ] || continue
  cp -L "$f" "$PREFIX/lib/"
  copy_deps "$f"
done
# llama.cpp's shared build: the CPU backends are loaded at run time from the directory of libggml, so they are
# not in ldd's list; take all of them (the best one for each machine is picked when mmirage starts).
LLAMA_LIB_DIR="$(sed -n 's/^MMIRAGE_LLAMA_LIB_DIR:PATH=//p' "$BUILD/CMakeCache.txt")"
LLAMA_MODE="$(sed -n 's/^MMIRAGE_LLAMA_MODE:STRING=//p' "$BUILD/CMakeCache.txt")"
if [ "$LLAMA_MODE" = prebuilt ]; then
  for f in "$LLAMA_LIB_DIR"/libggml-*.so; do
    cp -L "$f" "$PREFIX/lib/"
    copy_deps "$f"
  done
  # The CPU backend setup.sh built for the build machine's CPU (-march=native): lib/cpu-native/, used where the
  # running CPU has every flag in its cpu-flags file, else the prebuilt variants above (see docs/install.md).
  NATIVE_CPU_DIR="$(sed -n 's/^MMIRAGE_LLAMA_NATIVE_CPU_DIR:PATH=//p' "$BUILD/CMakeCache.txt")"
  if [ -n "$NATIVE_CPU_DIR" ]; then
    [ -f "$NATIVE_CPU_DIR/libggml-cpu.so" ] && [ -f "$NATIVE_CPU_DIR/cpu-flags" ] \
      || die "$NATIVE_CPU_DIR lacks libggml-cpu.so or cpu-flags; run scripts/setup.sh"
    mkdir -p "$PREFIX/lib/cpu-native"
    cp -L "$NATIVE_CPU_DIR/libggml-cpu.so" "$NATIVE_CPU_DIR/cpu-flags" "$PREFIX/lib/cpu-native/"
    chmod u+w "$PREFIX/lib/cpu-native/libggml-cpu.so"
    patchelf --set-rpath '$ORIGIN/..' "$PREFIX/lib/cpu-native/libggml-cpu.so"   # libggml-base and libgomp in lib/
    copy_deps "$PREFIX/lib/cpu-native/libggml-cpu.so"   # libgomp
  fi
fi
if [ "$SERVER" = 1 ]; then
  install -m 755 "$(readlink -f "$BUILD/llama-server")" "$PREFIX/bin/llama-server"
  copy_deps "$PREFIX/bin/llama-server"
fi
[ -f "$ROOT/share/mmirage/custom_worker.py" ] && cp "$ROOT/share/mmirage/custom_worker.py" "$PREFIX/share/mmirage/"
[ -f "$ROOT/share/mmirage/ray_driver.py" ] && cp "$ROOT/share/mmirage/ray_driver.py" "$PREFIX/share/mmirage/"
cp -r "$ROOT/examples" "$PREFIX/share/mmirage/examples"

# RUNPATH: executables look in ../lib, libraries beside themselves. (A library's own RUNPATH is what the loader
# uses for its dependencies, so every copied library gets one.)
for f in "$PREFIX"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "$PREFIX"/lib/*; do [ -f "$f" ] || continue; chmod u+w "$f"; patchelf --set-rpath '$ORIGIN' "$f"; done
log "installed mmirage $VERSION into $PREFIX ($(ls "$PREFIX/lib" | wc -l) libraries, llama.cpp: ${LLAMA_MODE:-source})"

if [ "$TARBALL" = 1 ]; then
  NAME="mmirage-$VERSION-linux-x86_64"
  OUT="$(dirname "$PREFIX")/$NAME.tar.gz"
  tar czf "$OUT" --transform "s|^\.|$NAME|" -C "$PREFIX" .
  log "wrote $OUT"
  echo "$OUT"
fi
