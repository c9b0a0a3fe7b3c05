#!/usr/bin/env bash
# Prepares what bench/gpu/check.sh needs on a machine with no internet and no package registries, into
# build-gpu-carry/ (ignored by git; pass it as `carry` with the working tree, ≤ 64 MiB in all):
#   llama-src.tar.gz   the pinned llama.cpp source without docs, web UI and test models (stamped .mmirage-commit)
#   deps.tar.gz        extracted Debian packages of mmirage's build dependencies and their runtime closure
#                      (yaml-cpp, simdjson, CLI11, mimalloc, curl, zstd, zlib, png, jpeg, webp, openssl, pkgconf),
#                      used there only if the machine lacks one of them
#   arrow.tar.gz       the Arrow/Parquet C++ libraries and headers setup.sh unpacked from the pinned pyarrow wheel
# Run after scripts/setup.sh (which fetched the source). Prints the carried size.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${MMIRAGE_CACHE:-$HOME/.cache/mmirage}"
LLAMA_COMMIT="80fb11ac73e66d89eae2c6a91d8a77428fa733ed"
SRC="$CACHE/llama.cpp/3.21.1-${LLAMA_COMMIT:0:7}/src"
LIMIT_MB=56   # the carried tree is limited to 64 MiB with the repository
OUT="$ROOT/build-gpu-carry"
die() { echo "prepare: error: $*" >&2; exit 1; }
[ "$(git -C "$SRC" rev-parse HEAD 2>/dev/null)" = "$LLAMA_COMMIT" ] || die "no llama.cpp checkout at $SRC (run scripts/setup.sh)"
rm -rf "$OUT"; mkdir -p "$OUT"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT

# 1. llama.cpp source, trimmed: what CMake builds (ggml, llama, common, tools/server, tools/mtmd) plus the vocab
#    and chat template that mmirage-make-test-model reads.
mkdir "$TMP/src"
git -C "$SRC" archive --format=tar "$LLAMA_COMMIT" -- . ':!docs' ':!models' ':!tools/server/public' \
  ':!tools/server/webui' ':!tools/server/tests' ':!tools/mtmd/test-*' ':!gguf-py' ':!media' ':!.github' ':!tests' \
  ':!examples' ':!ci' | tar x -C "$TMP/src"
mkdir -p "$TMP/src/models/templates" "$TMP/src/examples" "$TMP/src/tests"
cp "$SRC/models/ggml-vocab-qwen2.gguf" "$TMP/src/models/"
cp "$SRC/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja" "$TMP/src/models/templates/"
touch "$TMP/src/examples/CMakeLists.txt" "$TMP/src/tests/CMakeLists.txt"
echo "$LLAMA_COMMIT" >"$TMP/src/.mmirage-commit"
tar czf "$OUT/llama-src.tar.gz" -C "$TMP/src" .

# 2. Debian packages: the -dev packages mmirage builds against and every library in their runtime closure.
PKGS=(libyaml-cpp-dev libyaml-cpp0.7 libsimdjson-dev libsimdjson14 libcli11-dev libmimalloc-dev libmimalloc2.0
      libcurl4-openssl-dev libcurl4 libzstd-dev libzstd1 zlib1g-dev zlib1g pkgconf pkgconf-bin libpkgconf3
      libpng-dev libpng16-16 libjpeg62-turbo-dev libjpeg62-turbo libwebp-dev libwebp7 libwebpmux3 libwebpdemux2
      libssl-dev libssl3)
for lib in $(ldd /usr/lib/x86_64-linux-gnu/libcurl.so.4 | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p'); do
  pkg="$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | head -1 | cut -d: -f1)" || true
  case "$pkg" in ""|libc6|libgcc-s1|libstdc++6) ;; *) PKGS+=("$pkg") ;; esac
done
read -r -a PKGS <<<"$(printf '%s\n' "${PKGS[@]}" | sort -u | tr '\n' ' ')"
(cd "$TMP" && apt-get download -q "${PKGS[@]}" >/dev/null) || die "apt-get download failed for: ${PKGS[*]}"
mkdir -p "$TMP/deps"
for deb in "$TMP"/*.deb; do dpkg-deb -x "$deb" "$TMP/deps"; done
rm -rf "$TMP/deps/usr/share/doc" "$TMP/deps/usr/share/man"
find "$TMP/deps" -name "*.a" -delete   # shared linking only
printf '%s\n' "${PKGS[@]}" >"$TMP/deps/PACKAGES"
tar czf "$OUT/deps.tar.gz" -C "$TMP/deps" .

# 3. Arrow/Parquet C++ (the device cannot fetch the wheel).
ARROW="$CACHE/arrow/26.0.1"
[ -f "$ARROW/.complete" ] || die "no Arrow C++ at $ARROW (run scripts/setup.sh)"
tar czf "$OUT/arrow.tar.gz" -C "$ARROW" .
du -sh "$OUT" "$OUT"/* | sed 's/^/prepare: /'
mb=$(du -sm "$OUT" | cut -f1)
((mb <= LIMIT_MB)) || die "build-gpu-carry is $mb MB, over the $LIMIT_MB MB left for it"
