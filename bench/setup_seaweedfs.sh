#!/usr/bin/env bash
# Builds a pinned SeaweedFS `weed` binary (Apache-2.0) for bench/s3_bench.py --server seaweedfs.
# Source comes from the Go module proxy; its hash is checked against the Go checksum database (sum.golang.org,
# Go's default GOSUMDB), so a tampered module download fails the build. Installs outside the repo into
# ~/.cache/mmirage/seaweedfs/<version>/bin/weed; idempotent (an existing binary is reused). Prints the path.
# Env: MMIRAGE_JOBS (default 2) caps parallel compile jobs; GO (default: go on PATH, else /usr/local/go/bin/go).
set -euo pipefail

VERSION="v0.0.0-20261109003541-7506e5f91cd6"
MODULE="github.com/seaweedfs/seaweedfs"
PREFIX="${HOME}/.cache/mmirage/seaweedfs/${VERSION}"
WEED="${PREFIX}/bin/weed"

if [[ -x "${WEED}" ]]; then
  echo "${WEED}"
  exit 0
fi

GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
if [[ ! -x "${GO}" ]]; then
  echo "setup_seaweedfs.sh: no Go toolchain found (set GO=/path/to/go)" >&2
  exit 1
fi
JOBS="${MMIRAGE_JOBS:-2}"

mkdir -p "${PREFIX}/bin"
tmp="$(mktemp -d "${PREFIX}/build.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT

# `go install pkg@version` refuses this module (its go.mod has a replace directive), and a wrapper module would
# drop that replace. So: `go mod download` fetches the pinned module (zip hash checked against sum.golang.org),
# and the build runs in a writable copy of it, with its own go.mod and go.sum, which pin and verify every
# dependency exactly as upstream builds it.
export GOFLAGS="-mod=readonly"
export GOSUMDB="${GOSUMDB:-sum.golang.org}"
dir="$("${GO}" mod download -json "${MODULE}@${VERSION}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [[ -z "${dir}" || ! -f "${dir}/go.mod" ]]; then
  echo "setup_seaweedfs.sh: go mod download ${MODULE}@${VERSION} failed" >&2
  exit 1
fi
cp -r "${dir}" "${tmp}/src"
chmod -R u+w "${tmp}/src"
cd "${tmp}/src"
nice -n 10 "${GO}" build -p "${JOBS}" -trimpath -o "${WEED}.tmp" ./weed
mv "${WEED}.tmp" "${WEED}"
echo "${WEED}"
