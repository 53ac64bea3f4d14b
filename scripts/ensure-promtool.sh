#!/usr/bin/env bash
# Print the path of a promtool binary on stdout; diagnostics go to stderr.
#
# Resolution order (like scripts/ensure-helm.sh):
#   1. $PROMTOOL_BIN, if set (must be an executable promtool, otherwise this fails: an explicit
#      choice is never silently overridden).
#   2. A cached build at ${XDG_CACHE_HOME:-$HOME/.cache}/sms-worker/bin/promtool-<version>.
#   3. Build it once from the Go module proxy, then reuse it.
#
# Why not `go install github.com/prometheus/prometheus/cmd/promtool@v0.316.0`: that resolves
# github.com/hashicorp/nomad/api at v0.0.0-20261016150620-df630b26e78a, which the proxy does not
# serve. A throwaway module that requires Prometheus and replaces that one dependency with an
# earlier pseudo-version that is served builds the same promtool (about 4.5 minutes cold on two
# cores). promtool on PATH is ignored on purpose: the tests pin the version they were written for.
#
# Override the pinned version with PROMETHEUS_VERSION=v0.x.y (and NOMAD_API_VERSION if needed).
set -euo pipefail

PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
NOMAD_API_VERSION="${NOMAD_API_VERSION:-v0.0.0-20260907080526-08ef8f3d26da}"
CACHE_ROOT="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/sms-worker"
CACHE_BIN_DIR="${CACHE_ROOT}/bin"
CACHED_PROMTOOL="${CACHE_BIN_DIR}/promtool-${PROMETHEUS_VERSION}"

log() { printf 'ensure-promtool: %s\n' "$*" >&2; }
die() { printf 'ensure-promtool: error: %s\n' "$*" >&2; exit 1; }

# works <path>: the binary runs and answers like promtool.
# (The help is captured first: `grep -q` would stop reading early and, with pipefail, fail the pipe.)
works() {
  local help
  help="$("$1" --help 2>&1 || true)"
  [[ "${help}" == *"Tooling for the Prometheus monitoring system"* ]]
}

if [[ -n "${PROMTOOL_BIN:-}" ]]; then
  [[ -x "${PROMTOOL_BIN}" ]] || die "PROMTOOL_BIN=${PROMTOOL_BIN} is not an executable file"
  works "${PROMTOOL_BIN}" || die "PROMTOOL_BIN=${PROMTOOL_BIN} does not run as promtool"
  echo "${PROMTOOL_BIN}"
  exit 0
fi

cached_ok() { [[ -x "${CACHED_PROMTOOL}" ]] && works "${CACHED_PROMTOOL}"; }

if cached_ok; then
  echo "${CACHED_PROMTOOL}"
  exit 0
fi

command -v go >/dev/null 2>&1 \
  || die "no promtool found (PROMTOOL_BIN unset, none at ${CACHED_PROMTOOL}) and Go is not installed to build one"

goproxy="$(go env GOPROXY 2>/dev/null || true)"
if [[ "${goproxy}" == "off" ]]; then
  die "GOPROXY=off: cannot download github.com/prometheus/prometheus@${PROMETHEUS_VERSION}; set GOPROXY or PROMTOOL_BIN"
fi

mkdir -p "${CACHE_BIN_DIR}"
# Serialise concurrent builds (parallel test workers, several checkouts) on a lock file.
exec 9>"${CACHE_ROOT}/promtool-build.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
  if cached_ok; then
    echo "${CACHED_PROMTOOL}"
    exit 0
  fi
fi

log "building promtool ${PROMETHEUS_VERSION} from ${goproxy}; this takes a few minutes the first time"
start="$(date +%s)"
work="$(mktemp -d "${CACHE_ROOT}/promtool-build.XXXXXX")"
trap 'rm -rf "${work}"' EXIT

cat >"${work}/go.mod" <<EOF
module sms-worker.local/promtool-build

go 1.25

require github.com/prometheus/prometheus ${PROMETHEUS_VERSION}

replace github.com/hashicorp/nomad/api => github.com/hashicorp/nomad/api ${NOMAD_API_VERSION}
EOF
# A blank import keeps `go mod tidy` from dropping the requirement.
cat >"${work}/tools.go" <<'EOF'
//go:build tools

package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
EOF

# Module v0.316.0 is release 3.16.0 (Prometheus 3.x tags its Go module v0.3xx.y).
module_minor="${PROMETHEUS_VERSION#v0.}"
release="${module_minor:0:1}.${module_minor:1}"
version_flags="-X github.com/prometheus/common/version.Version=${release}"
(
  cd "${work}"
  GOFLAGS=-mod=mod go mod tidy >&2 \
    || die "resolving github.com/prometheus/prometheus@${PROMETHEUS_VERSION} failed (see above); check ${goproxy}"
  CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w ${version_flags}" \
    -o "${work}/promtool" github.com/prometheus/prometheus/cmd/promtool >&2 \
    || die "go build of promtool failed (see above)"
)
# Atomic move so a half-written binary is never picked up.
mv -f "${work}/promtool" "${CACHED_PROMTOOL}"
log "built $("${CACHED_PROMTOOL}" --version 2>&1 | head -n 1) in $(( $(date +%s) - start ))s -> ${CACHED_PROMTOOL}"

cached_ok || die "built binary at ${CACHED_PROMTOOL} does not run"
echo "${CACHED_PROMTOOL}"
