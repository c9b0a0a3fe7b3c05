#!/usr/bin/env bash
# The relocatable install (scripts/install.sh): builds the tarball from this build, unpacks it into an empty
# folder and checks that
#   1. every shared library that bin/mmirage, bin/llama-server and each lib/*.so load resolves inside the bundle,
#      except glibc's own (ldd, with no LD_LIBRARY_PATH);
#   2. the model-free quickstart (examples/quickstart/restructure.yaml) runs from there with a bare environment and
#      writes the same rows as the build's own binary;
#   3. with llama.cpp's shared build, the embedded engine loads its CPU backend from the bundle's lib/ and
#      generates (a tiny synthetic model, when the build has mmirage-make-test-model): the one built for this CPU
#      (lib/cpu-native/) when the build has it, and the prebuilt variants when its cpu-flags name a flag this CPU
#      lacks (or when there is none).
# Usage: bundle_test.sh <source dir> <build dir>. Any failure exits non-zero with one line saying what.
set -euo pipefail
SRC="$(cd "$1" && pwd)"; BUILD="$(cd "$2" && pwd)"
fail() { echo "bundle_test: FAIL: $*" >&2; exit 1; }
[ -x "$BUILD/llama-server" ] || fail "$BUILD/llama-server is missing (scripts/test.sh builds it)"

TMP="$(mktemp -d /tmp/mmirage-bundle-test.XXXXXX)"
trap 'rm -rf "$TMP"' EXIT
TARBALL="$("$SRC/scripts/install.sh" --prefix "$TMP/stage/mmirage" --build-dir "$BUILD" --tarball 2>"$TMP/install.log" | tail -1)" \
  || fail "scripts/install.sh failed: $(tail -3 "$TMP/install.log")"
case "$(basename "$TARBALL")" in
  mmirage-*-linux-x86_64.tar.gz) ;;
  *) fail "unexpected tarball name '$TARBALL'" ;;
esac
mkdir "$TMP/unpacked"
tar xzf "$TARBALL" -C "$TMP/unpacked"
TOP="$(ls "$TMP/unpacked")"
B="$TMP/unpacked/$TOP"
[ "$TOP" = "$(basename "$TARBALL" .tar.gz)" ] || fail "tarball's top folder is '$TOP'"
for f in bin/mmirage bin/llama-server share/mmirage/custom_worker.py share/mmirage/ray_driver.py share/mmirage/examples/quickstart/restructure.yaml; do
  [ -e "$B/$f" ] || fail "bundle lacks $f"
done
# Every shared module of the build (libmmirage_*.so, loaded on first use) travels in lib/.
for m in "$BUILD"/lib/libmmirage_*.so; do
  [ -f "$m" ] || continue
  [ -f "$B/lib/$(basename "$m")" ] || fail "bundle lacks lib/$(basename "$m")"
done
rm -rf "$TMP/stage"   # the bundle must not lean on where it was staged

# 1. ldd: every non-glibc library resolves inside the bundle.
glibc='^(linux-vdso\.so|ld-linux[^ ]*\.so|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|libresolv\.so|libutil\.so|libanl\.so|libnsl\.so|libmvec\.so|libcrypt\.so|libcuda\.so|libnvidia-)'
checked=0
for f in "$B"/bin/* "$B"/lib/*; do
  [ -f "$f" ] || continue   # lib/cpu-native/ is checked below
  out="$(env -u LD_LIBRARY_PATH ldd "$f" 2>&1)" || fail "ldd $f: $out"
  while read -r line; do
    [ -n "$line" ] || continue
    name="${line%% *}"
    case "$line" in *"not found"*) fail "$(basename "$f") needs $name: not found" ;; esac
    [[ "$name" =~ $glibc ]] && continue
    [[ "$name" == /* ]] && continue   # the loader itself, by absolute path
    path="$(sed -n 's/.*=> \(\/[^ ]*\) (.*/\1/p' <<<"$line")"
    path="$(realpath -m "$path")"
    [[ "$path" == "$B/lib/"* ]] || fail "$(basename "$f") loads $name from $path, outside the bundle"
    checked=$((checked + 1))
  done <<<"$out"
done
if [ -d "$B/lib/cpu-native" ]; then   # the CPU backend built for this CPU resolves its deps (libggml-base, libgomp) in lib/
  out="$(env -u LD_LIBRARY_PATH ldd "$B/lib/cpu-native/libggml-cpu.so" 2>&1)" || fail "ldd cpu-native/libggml-cpu.so: $out"
  for dep in libggml-base.so libgomp.so.1; do
    [[ "$(realpath -m "$(sed -n "s/^[[:space:]]*$dep => \([^ ]*\) .*/\1/p" <<<"$out")")" == "$B/lib/$dep" ]] \
      || fail "cpu-native/libggml-cpu.so does not load $dep from the bundle: $out"
  done
fi
((checked > 5)) || fail "ldd checked only $checked libraries: the check itself is broken"
echo "bundle_test: ldd: $checked library references of $(ls "$B/bin" "$B/lib" | wc -l) files resolve inside the bundle"

# 2. The model-free quickstart from the bundle, with a bare environment, compared with the build's own output.
run_restructure() {  # $1 binary, $2 work dir
  mkdir -p "$2"
  cp -r "$B/share/mmirage/examples" "$2/examples"
  (cd "$2" && env -i PATH=/usr/bin:/bin HOME="$2" "$1" run --config examples/quickstart/restructure.yaml \
     --progress none >"$2/log" 2>&1) || fail "$1 run restructure.yaml failed: $(tail -2 "$2/log")"
}
run_restructure "$B/bin/mmirage" "$TMP/run-bundle"
run_restructure "$BUILD/mmirage" "$TMP/run-build"
# The merged dataset's data files (JSONL or Arrow, whatever the output format is), byte for byte.
merged() { (cd "$1" && find . -path '*merged*' -name 'data*' -type f | sort); }
got="$(merged "$TMP/run-bundle")"; want="$(merged "$TMP/run-build")"
[ -n "$got" ] || fail "restructure.yaml from the bundle wrote no merged data files"
[ "$got" = "$want" ] || fail "the bundle wrote merged files '$got', the build '$want'"
for f in $got; do
  cmp -s "$TMP/run-bundle/$f" "$TMP/run-build/$f" || fail "the bundle's $f differs from the build's"
done
rows="$(sed -n 's/.*Merged dataset .* rows=\([0-9]*\).*/\1/p' "$TMP/run-bundle/log" | head -1)"
[ -n "$rows" ] && ((rows > 0)) || fail "the bundle's restructure run merged no rows: $(tail -1 "$TMP/run-bundle/log")"
echo "bundle_test: restructure.yaml from the bundle: $rows rows, identical to the build's"
# Without its Arrow module, the same run fails with one line that names the module (and no crash).
if [ -f "$B/lib/libmmirage_arrow.so" ]; then
  mv "$B/lib/libmmirage_arrow.so" "$TMP/arrow-module.so"
  rm -rf "$TMP/run-nomodule"; mkdir -p "$TMP/run-nomodule"; cp -r "$B/share/mmirage/examples" "$TMP/run-nomodule/examples"
  rc=0
  (cd "$TMP/run-nomodule" && env -i PATH=/usr/bin:/bin HOME="$TMP/run-nomodule" "$B/bin/mmirage" run \
     --config examples/quickstart/restructure.yaml --progress none >log 2>&1) || rc=$?
  mv "$TMP/arrow-module.so" "$B/lib/libmmirage_arrow.so"
  ((rc != 0 && rc < 128)) || fail "a run without lib/libmmirage_arrow.so exited with $rc (expected a plain failure)"
  grep -q 'cannot load libmmirage_arrow.so (Arrow/Parquet support' "$TMP/run-nomodule/log" \
    || fail "a run without lib/libmmirage_arrow.so did not say so: $(tail -2 "$TMP/run-nomodule/log")"
  echo "bundle_test: without lib/libmmirage_arrow.so: exit $rc, $(grep -m1 -o 'cannot load libmmirage_arrow.so[^:]*' "$TMP/run-nomodule/log")"
fi

# 3. The embedded engine from the bundle (llama.cpp's shared build: backends are loaded from the bundle's lib/).
if grep -q '^MMIRAGE_LLAMA_MODE:STRING=prebuilt' "$BUILD/CMakeCache.txt" && [ -x "$BUILD/mmirage-make-test-model" ]; then
  "$BUILD/mmirage-make-test-model" --out "$TMP/tiny.gguf" --preset tiny >/dev/null || fail "cannot make the tiny model"
  mkdir -p "$TMP/llm"
  printf '{"text": "hello"}\n{"text": "world"}\n' >"$TMP/llm/data.jsonl"
  cat >"$TMP/llm/cfg.yaml" <<EOF
processors:
  - type: llm
    server_args:
      model_path: $TMP/tiny.gguf
      extra_engine_args: {max_running_requests: 2, context_length: 256, n_threads: 1}
    default_sampling_params: {temperature: 0, max_new_tokens: 4, ignore_eos: true}
loading_params:
  datasets: [{type: JSONL, path: $TMP/llm/data.jsonl, output_dir: $TMP/llm/out}]
  state_dir: $TMP/llm/state
processing_params:
  inputs: [{name: text, key: text}]
  outputs: [{name: answer, type: llm, prompt: "{{ text }}"}]
  remove_columns: true
  output_schema: {answer: "{{ answer }}"}
EOF
  llm_run() {  # $1: label; prints the CPU backend's path; the run must write 2 rows
    rm -rf "$TMP/llm/out" "$TMP/llm/state"
    (cd "$TMP/llm" && env -i PATH=/usr/bin:/bin HOME="$TMP/llm" "$B/bin/mmirage" run --config cfg.yaml --progress none \
       --log-level DEBUG >log 2>&1) || fail "LLM run from the bundle ($1) failed: $(grep -v DEBUG "$TMP/llm/log" | tail -2)"
    local backend n
    backend="$(sed -n 's/.*loaded CPU backend from \(.*\)$/\1/p' "$TMP/llm/log" | head -1)"
    [ -n "$backend" ] || fail "no CPU backend was loaded ($1): $(grep -i 'backend' "$TMP/llm/log" | head -2)"
    n="$(sed -n 's/.*Shard 0 done: \([0-9]*\) rows written.*/\1/p' "$TMP/llm/log" | head -1)"
    [ "$n" = 2 ] || fail "LLM run from the bundle ($1) wrote '${n}' rows, expected 2"
    realpath "$backend"
  }
  backend="$(llm_run default)"
  if [ -f "$B/lib/cpu-native/cpu-flags" ]; then
    # Built on this machine: the CPU backend built for this CPU is the one used ...
    [ "$backend" = "$B/lib/cpu-native/libggml-cpu.so" ] || fail "the CPU backend came from $backend, not the bundle's cpu-native/"
    echo "bundle_test: embedded engine from the bundle: cpu-native/libggml-cpu.so, 2 rows"
    # ... and on a CPU that lacks one of its build machine's flags, the prebuilt variants are.
    echo "mmirage_test_flag_no_cpu_has" >>"$B/lib/cpu-native/cpu-flags"
    backend="$(llm_run "other CPU")"
    grep -q "built for another CPU (this one lacks 'mmirage_test_flag_no_cpu_has')" "$TMP/llm/log" \
      || fail "the engine did not say why it skipped cpu-native/: $(grep -i 'cpu backend' "$TMP/llm/log" | head -2)"
  fi
  [[ "$backend" == "$B/lib/libggml-cpu-"* ]] || fail "the CPU backend came from $backend, not the bundle's prebuilt variants"
  echo "bundle_test: embedded engine from the bundle: $(basename "$backend"), 2 rows"
fi
echo "bundle_test: PASS"
