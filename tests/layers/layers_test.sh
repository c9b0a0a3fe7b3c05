#!/usr/bin/env bash
# The layering check (cmake/layers.cmake): the real tree passes with the real layer graph; a tree with an upward
# include fails, naming the file, the line and both folders; a transitive dependency is allowed.
# Usage: layers_test.sh <source dir> <layer spec as CMakeLists.txt passes it>
set -u
SRC="$1" SPEC="$2"
fail() { echo "FAIL: $*" >&2; exit 1; }
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT

cmake -DSRC_DIR="$SRC/src" "-DLAYERS=$SPEC" -P "$SRC/cmake/layers.cmake" >"$T/real.log" 2>&1 \
  || { cat "$T/real.log" >&2; fail "the real tree has an upward include"; }

mkdir -p "$T/src/util" "$T/src/data" "$T/src/exec"
printf '#pragma once\n' >"$T/src/util/a.h"
printf '#pragma once\n#include "util/a.h"\n' >"$T/src/data/b.h"
printf '#include "data/b.h"\n#include "util/a.h"\n' >"$T/src/exec/c.cc"   # util only through data: allowed
spec="util:|data:util,|exec:data,"
cmake -DSRC_DIR="$T/src" "-DLAYERS=$spec" -P "$SRC/cmake/layers.cmake" >"$T/ok.log" 2>&1 \
  || { cat "$T/ok.log" >&2; fail "a downward and a transitive include were refused"; }

printf '#pragma once\n// a comment line\n#include "exec/c.h"\n' >"$T/src/util/a.h"
if cmake -DSRC_DIR="$T/src" "-DLAYERS=$spec" -P "$SRC/cmake/layers.cmake" >"$T/bad.log" 2>&1; then
  fail "an upward include (util -> exec) passed"
fi
grep -q "src/util/a.h:3: util/ includes exec/" "$T/bad.log" || { cat "$T/bad.log" >&2; fail "the error does not name file:line and folders"; }
echo "layers_test: 3 checks passed"
