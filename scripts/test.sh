#!/usr/bin/env bash
# Builds what is needed (via scripts/setup.sh) and runs every test. Non-zero on any failure.
# Extra arguments go to ctest (e.g. scripts/test.sh -R Jmespath).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
cd "$ROOT/build"
ctest --output-on-failure --timeout 900 -j "${MMIRAGE_TEST_JOBS:-2}" "$@"
