#!/usr/bin/env bash
# Print the path of a promtool binary on stdout; diagnostics go to stderr. With the argument
# `prometheus`, the same for the Prometheus server, built from the same module (the dashboard test
# evaluates every panel query on a Prometheus scraping a live worker).
#
# Resolution order (like scripts/ensure-helm.sh):
#   1. $PROMTOOL_BIN (or $PROMETHEUS_BIN), if set (must be an executable promtool / prometheus,
#      otherwise this fails: an explicit choice is never silently overridden).
#   2. A cached build at ${XDG_CACHE_HOME:-$HOME/.cache}/sms-worker/bin/<tool>-<version>.
#   3. Build it once from the Go module proxy, then reuse it.
#
# Why not `go install github.com/prometheus/prometheus/cmd/promtool@v0.316.0`: that resolves
# github.com/hashicorp/nomad/api at v0.0.0-20261016150620-df630b26e78a, which the proxy does not
# serve. A throwaway module that requires Prometheus and replaces that one dependency with an
# earlier pseudo-version that is served builds the same promtool (about 4.5 minutes cold on two
# cores; the server about 4 minutes more). A promtool or prometheus on PATH is ignored on purpose:
# the tests pin the version they were written for.
#
# Override the pinned version with PROMETHEUS_VERSION=v0.x.y (and NOMAD_API_VERSION if needed).
set -euo pipefail

PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
NOMAD_API_VERSION="${NOMAD_API_VERSION:-v0.0.0-20260907080526-08ef8f3d26da}"
CACHE_ROOT="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/sms-worker"
CACHE_BIN_DIR="${CACHE_ROOT}/bin"
TOOL="${1:-promtool}"
case "${TOOL}" in
  promtool) EXPLICIT_BIN="${PROMTOOL_BIN:-}"; EXPLICIT_VAR=PROMTOOL_BIN; HELP_LINE="Tooling for the Prometheus monitoring system" ;;
  prometheus) EXPLICIT_BIN="${PROMETHEUS_BIN:-}"; EXPLICIT_VAR=PROMETHEUS_BIN; HELP_LINE="The Prometheus monitoring server" ;;
  *) printf 'ensure-promtool: error: unknown tool %s (promtool or prometheus)\n' "${TOOL}" >&2; exit 2 ;;
esac
CACHED_TOOL="${CACHE_BIN_DIR}/${TOOL}-${PROMETHEUS_VERSION}"

log() { printf 'ensure-promtool: %s\n' "$*" >&2; }
die() { printf 'ensure-promtool: error: %s\n' "$*" >&2; exit 1; }

# works <path>: the binary runs and answers like the tool asked for.
# (The help is captured first: `grep -q` would stop reading early and, with pipefail, fail the pipe.)
works() {
  local help
  help="$("$1" --help 2>&1 || true)"
  [[ "${help}" == *"${HELP_LINE}"* ]]
}

if [[ -n "${EXPLICIT_BIN}" ]]; then
  [[ -x "${EXPLICIT_BIN}" ]] || die "${EXPLICIT_VAR}=${EXPLICIT_BIN} is not an executable file"
  works "${EXPLICIT_BIN}" || die "${EXPLICIT_VAR}=${EXPLICIT_BIN} does not run as ${TOOL}"
  echo "${EXPLICIT_BIN}"
  exit 0
fi

cached_ok() { [[ -x "${CACHED_TOOL}" ]] && works "${CACHED_TOOL}"; }

if cached_ok; then
  echo "${CACHED_TOOL}"
  exit 0
fi

command -v go >/dev/null 2>&1 \
  || die "no ${TOOL} found (${EXPLICIT_VAR} unset, none at ${CACHED_TOOL}) and Go is not installed to build one"

goproxy="$(go env GOPROXY 2>/dev/null || true)"
if [[ "${goproxy}" == "off" ]]; then
  die "GOPROXY=off: cannot download github.com/prometheus/prometheus@${PROMETHEUS_VERSION}; set GOPROXY or ${EXPLICIT_VAR}"
fi

mkdir -p "${CACHE_BIN_DIR}"
# Serialise concurrent builds (parallel test workers, several checkouts) on a lock file.
exec 9>"${CACHE_ROOT}/${TOOL}-build.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
  if cached_ok; then
    echo "${CACHED_TOOL}"
    exit 0
  fi
fi

log "building ${TOOL} ${PROMETHEUS_VERSION} from ${goproxy}; this takes a few minutes the first time"
start="$(date +%s)"
work="$(mktemp -d "${CACHE_ROOT}/${TOOL}-build.XXXXXX")"
trap 'rm -rf "${work}"' EXIT

cat >"${work}/go.mod" <<EOF
module sms-worker.local/promtool-build

go 1.25

require github.com/prometheus/prometheus ${PROMETHEUS_VERSION}

replace github.com/hashicorp/nomad/api => github.com/hashicorp/nomad/api ${NOMAD_API_VERSION}
EOF
# A blank import keeps `go mod tidy` from dropping the requirement.
cat >"${work}/tools.go" <<EOF
//go:build tools

package tools

import _ "github.com/prometheus/prometheus/cmd/${TOOL}"
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
    -o "${work}/${TOOL}" "github.com/prometheus/prometheus/cmd/${TOOL}" >&2 \
    || die "go build of ${TOOL} failed (see above)"
)
# Atomic move so a half-written binary is never picked up.
mv -f "${work}/${TOOL}" "${CACHED_TOOL}"
log "built $("${CACHED_TOOL}" --version 2>&1 | head -n 1) in $(( $(date +%s) - start ))s -> ${CACHED_TOOL}"

cached_ok || die "built binary at ${CACHED_TOOL} does not run"
echo "${CACHED_TOOL}"
