#!/usr/bin/env bash
# Formats every C++ file of the repository (src/, tests/, fuzz/, tools/, bench/) with .clang-format, or with
# --check lists the files that are not formatted and exits 1 (scripts/test.sh runs the check). The formatter is
# Debian's clang-format-14, pinned because another version formats some constructs differently; it is installed
# when missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CF=clang-format-14
if ! command -v "$CF" >/dev/null 2>&1; then
  echo "[format] installing Debian's $CF" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$CF" >/dev/null; } \
    || { echo "[format] error: $CF could not be installed" >&2; exit 1; }
fi
cd "$ROOT"
mapfile -t files < <(git ls-files -- '*.cc' '*.h' | grep -E '^(src|tests|fuzz|tools|bench)/')
if [ "${1:-}" = --check ]; then
  bad=()
  for f in "${files[@]}"; do
    "$CF" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if ((${#bad[@]})); then
    printf '[format] not formatted (run scripts/format.sh): %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "[format] ${#files[@]} files formatted"
else
  "$CF" -i "${files[@]}"
fi
