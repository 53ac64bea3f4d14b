#!/usr/bin/env bash
# Print the path of a Helm v4 binary on stdout; diagnostics go to stderr. The chart is checked
# with both Helm 3 (scripts/ensure-helm.sh) and Helm 4 (this script): clusters run either.
#
# Resolution order:
#   1. $HELM4_BIN, if set (must be an executable Helm v4, otherwise this fails: an explicit
#      choice is never silently overridden).
#   2. `helm` on PATH, if it reports a v4 version.
#   3. A cached build at ${XDG_CACHE_HOME:-$HOME/.cache}/sms-worker/bin/helm4.
#   4. Build it once with `go install helm.sh/helm/v4/cmd/helm@…` from the Go module proxy, then
#      reuse it.
#
# Override the pinned version with HELM4_VERSION=v4.x.y.
set -euo pipefail

HELM4_VERSION="${HELM4_VERSION:-v4.3.1}"
CACHE_ROOT="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/sms-worker"
CACHE_BIN_DIR="${CACHE_ROOT}/bin"
CACHED_HELM="${CACHE_BIN_DIR}/helm4"

log() { printf 'ensure-helm4: %s\n' "$*" >&2; }
die() { printf 'ensure-helm4: error: %s\n' "$*" >&2; exit 1; }

# helm_version <path>: the `helm version --short` answer of a working binary, empty otherwise.
helm_version() { "$1" version --short 2>/dev/null || true; }

if [[ -n "${HELM4_BIN:-}" ]]; then
  [[ -x "${HELM4_BIN}" ]] || die "HELM4_BIN=${HELM4_BIN} is not an executable file"
  version="$(helm_version "${HELM4_BIN}")"
  [[ "${version}" == v4.* ]] || die "HELM4_BIN=${HELM4_BIN} is not Helm v4 (got '${version:-unknown}')"
  echo "${HELM4_BIN}"
  exit 0
fi

if path_helm="$(command -v helm 2>/dev/null)"; then
  if [[ "$(helm_version "${path_helm}")" == v4.* ]]; then
    echo "${path_helm}"
    exit 0
  fi
fi

# cached_ok: the cached binary exists and is exactly the pinned version (a bump rebuilds).
cached_ok() {
  [[ -x "${CACHED_HELM}" ]] || return 1
  local version
  version="$(helm_version "${CACHED_HELM}")"
  [[ "${version}" == "${HELM4_VERSION}" || "${version}" == "${HELM4_VERSION}+"* ]]
}

if cached_ok; then
  echo "${CACHED_HELM}"
  exit 0
fi

command -v go >/dev/null 2>&1 \
  || die "no Helm v4 found (HELM4_BIN unset, none on PATH, none at ${CACHED_HELM}) and Go is not installed to build one"

goproxy="$(go env GOPROXY 2>/dev/null || true)"
if [[ "${goproxy}" == "off" ]]; then
  die "GOPROXY=off: cannot download helm.sh/helm/v4@${HELM4_VERSION}; set GOPROXY (e.g. https://proxy.golang.org,direct) or HELM4_BIN"
fi

mkdir -p "${CACHE_BIN_DIR}"
# Serialise concurrent builds (e.g. parallel test workers) on a lock file.
exec 9>"${CACHE_ROOT}/helm4-build.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
  if cached_ok; then
    echo "${CACHED_HELM}"
    exit 0
  fi
fi

log "building helm ${HELM4_VERSION} with go install (GOPROXY=${goproxy}); this takes a few minutes the first time"
start="$(date +%s)"
tmp_bin="$(mktemp -d "${CACHE_ROOT}/build.XXXXXX")"
trap 'rm -rf "${tmp_bin}"' EXIT

# Helm 4's Makefile sets only the version by ldflags: unlike Helm 3, it reads the Kubernetes
# version it assumes for `template`/`lint` from its client-go dependency in the build info.
ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=${HELM4_VERSION}"
if ! GOBIN="${tmp_bin}" CGO_ENABLED=0 \
    go install -trimpath -ldflags "${ldflags}" "helm.sh/helm/v4/cmd/helm@${HELM4_VERSION}" >&2; then
  die "go install helm.sh/helm/v4/cmd/helm@${HELM4_VERSION} failed (see output above); check network access to ${goproxy} or set HELM4_BIN"
fi
# Atomic move so a half-written binary is never picked up.
mv -f "${tmp_bin}/helm" "${CACHED_HELM}"
log "built $(helm_version "${CACHED_HELM}") in $(( $(date +%s) - start ))s -> ${CACHED_HELM}"

cached_ok || die "built binary at ${CACHED_HELM} does not report ${HELM4_VERSION}"
echo "${CACHED_HELM}"
