#!/usr/bin/env bash
# Builds what is needed (via scripts/setup.sh) and runs every test. Non-zero on any failure.
# Extra arguments go to ctest (e.g. scripts/test.sh -R Jmespath).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
cd "$ROOT/build"
# The SLURM end-to-end tests (SlurmTest.*) submit to a real SLURM; .ci/run starts one, a developer runs
# tests/slurm/start_slurm.sh (as root) first. Without it they fail and say so.
if ! sinfo -h -o %t >/dev/null 2>&1; then
  echo "[test] SLURM is not running: SlurmTest.* will fail; start it with tests/slurm/start_slurm.sh" >&2
fi
ctest --output-on-failure --timeout 900 -j "${MMIRAGE_TEST_JOBS:-2}" "$@"
