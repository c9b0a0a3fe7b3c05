#!/usr/bin/env bash
# Builds what the tests need (scripts/setup.sh --for-tests: llama-server, the Python oracles, every test binary),
# brings up the services the tests need, and runs every test. Non-zero on any failure. Extra arguments go to ctest
# (e.g. scripts/test.sh -R Jmespath); `scripts/test.sh --build-only` sets up and builds without running anything.
# The sanitizer build and the fuzz smoke (scripts/sanitize.sh, scripts/fuzz.sh: a second and a third build of the
# tree) run after the tests in CI (CI=true) and with `scripts/test.sh --all`; a plain `scripts/test.sh` skips them.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ALL=0
[ "${CI:-}" = true ] && ALL=1
if [ "${1:-}" = --all ]; then ALL=1; shift; fi
"$ROOT/scripts/setup.sh" --for-tests
if [ "${1:-}" = --build-only ]; then exit 0; fi
# The HTML report test (StatsHtmlTest.*) renders the page in headless Chromium: Debian's chromium (and a font),
# installed here when missing. If that fails the test fails and says why; the other tests still run.
if ! command -v chromium >/dev/null 2>&1; then
  echo "[test] installing Debian's chromium for the HTML report test" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      chromium fonts-dejavu-core >/dev/null; } || echo "[test] chromium could not be installed: StatsHtmlTest.* will fail" >&2
fi
# The SLURM end-to-end tests (SlurmTest.*) submit to a real SLURM. When none answers, start the one-node test
# SLURM (munged, slurmctld, slurmd on localhost; needs root) and stop it again on the way out. A SLURM that
# cannot start must not hide the other tests: the SLURM tests then fail and say why.
if ! sinfo -h -o %t >/dev/null 2>&1; then
  if "$ROOT/tests/slurm/start_slurm.sh"; then
    trap '"$ROOT/tests/slurm/stop_slurm.sh"' EXIT
  else
    echo "[test] tests/slurm/start_slurm.sh failed: SlurmTest.* will fail" >&2
  fi
fi
# The kill -9 soak (HardeningTest.KillNines...) kills a run 50 times in CI and with --all (5 minutes), 12 times
# in a plain run; MMIRAGE_KILLS set by the caller wins.
[ "$ALL" = 1 ] || export MMIRAGE_KILLS="${MMIRAGE_KILLS:-12}"
rc=0
# Formatting: every C++ file as .clang-format says (scripts/format.sh formats them; a narrowed run skips the check).
if (($# == 0)); then "$ROOT/scripts/format.sh" --check || rc=1; fi
cd "$ROOT/build"
ctest --output-on-failure --timeout 900 -j "${MMIRAGE_TEST_JOBS:-2}" "$@" || rc=$?
# Sanitizers and fuzzers, in CI and with --all: the unit tests built and run under ASan+UBSan (scripts/sanitize.sh,
# build-asan/) and a 30 s smoke of every fuzzer on its seed corpus (scripts/fuzz.sh, build-fuzz/); any report fails
# the run. Both builds go through ccache, so a second run rebuilds only what changed. A run narrowed with ctest
# arguments skips them.
if (($# == 0)); then
  if [ "$ALL" = 1 ]; then
    "$ROOT/scripts/sanitize.sh" || rc=1
    "$ROOT/scripts/fuzz.sh" || rc=1
  else
    echo "[test] sanitizer build and fuzz smoke skipped (they run in CI, or with scripts/test.sh --all)" >&2
  fi
fi
exit "$rc"
