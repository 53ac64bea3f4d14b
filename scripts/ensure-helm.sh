#!/usr/bin/env bash
# Print the path of a Helm v3 binary on stdout; diagnostics go to stderr.
#
# Resolution order:
#   1. $HELM_BIN, if set (must be an executable Helm v3, otherwise this fails:
#      an explicit choice is never silently overridden).
#   2. `helm` on PATH, if it reports a v3 version.
#   3. A cached build at ${XDG_CACHE_HOME:-$HOME/.cache}/sms-worker/bin/helm.
#   4. Build it once from source with `go install` (needs Go and a reachable
#      GOPROXY; takes a few minutes on a small machine), then reuse it.
#
# Override the pinned version with HELM_VERSION=v3.x.y.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
CACHE_ROOT="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/sms-worker"
CACHE_BIN_DIR="${CACHE_ROOT}/bin"
CACHED_HELM="${CACHE_BIN_DIR}/helm"

log() { printf 'ensure-helm: %s\n' "$*" >&2; }
die() { printf 'ensure-helm: error: %s\n' "$*" >&2; exit 1; }

# helm_major <path>: prints "v3" etc. for a working helm binary, empty otherwise.
helm_major() {
  local version
  version="$("$1" version --short 2>/dev/null || true)"
  case "${version}" in
    v3.*) echo v3 ;;
    v*) echo "${version%%.*}" ;;
    *) echo "" ;;
  esac
}

if [[ -n "${HELM_BIN:-}" ]]; then
  [[ -x "${HELM_BIN}" ]] || die "HELM_BIN=${HELM_BIN} is not an executable file"
  major="$(helm_major "${HELM_BIN}")"
  [[ "${major}" == v3 ]] || die "HELM_BIN=${HELM_BIN} is not Helm v3 (got '${major:-unknown}')"
  echo "${HELM_BIN}"
  exit 0
fi

if path_helm="$(command -v helm 2>/dev/null)"; then
  if [[ "$(helm_major "${path_helm}")" == v3 ]]; then
    echo "${path_helm}"
    exit 0
  fi
  log "ignoring ${path_helm}: not Helm v3"
fi

# cached_ok: the cached binary exists and is exactly the pinned version (a bump rebuilds).
cached_ok() {
  [[ -x "${CACHED_HELM}" ]] || return 1
  local version
  version="$("${CACHED_HELM}" version --short 2>/dev/null || true)"
  [[ "${version}" == "${HELM_VERSION}" || "${version}" == "${HELM_VERSION}+"* ]]
}

if cached_ok; then
  echo "${CACHED_HELM}"
  exit 0
fi

command -v go >/dev/null 2>&1 \
  || die "no Helm v3 found (HELM_BIN unset, none on PATH, none at ${CACHED_HELM}) and Go is not installed to build one"

goproxy="$(go env GOPROXY 2>/dev/null || true)"
if [[ "${goproxy}" == "off" ]]; then
  die "GOPROXY=off: cannot download helm.sh/helm/v3@${HELM_VERSION}; set GOPROXY (e.g. https://proxy.golang.org,direct) or HELM_BIN"
fi

mkdir -p "${CACHE_BIN_DIR}"
# Serialise concurrent builds (e.g. parallel test workers) on a lock file.
lock="${CACHE_ROOT}/helm-build.lock"
exec 9>"${lock}"
if command -v flock >/dev/null 2>&1; then
  flock 9
  # Another process may have finished the build while we waited.
  if cached_ok; then
    echo "${CACHED_HELM}"
    exit 0
  fi
fi

log "building helm ${HELM_VERSION} with go install (GOPROXY=${goproxy}); this takes a few minutes the first time"
start="$(date +%s)"
tmp_bin="$(mktemp -d "${CACHE_ROOT}/build.XXXXXX")"
trap 'rm -rf "${tmp_bin}"' EXIT

# Mirror the ldflags of Helm's Makefile: without them `helm version` reports only "v3.NN" and,
# worse, `helm template`/`helm lint` assume Kubernetes v1.20 (fails kubeVersion constraints and
# deprecation checks). The Kubernetes version is derived from Helm's client-go dependency.
gomod="$(go mod download -json "helm.sh/helm/v3@${HELM_VERSION}" 2>&1 | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')" \
  || true
[[ -n "${gomod}" && -f "${gomod}" ]] \
  || die "cannot download helm.sh/helm/v3@${HELM_VERSION} from ${goproxy} (is the version right? is the proxy reachable?)"
client_go="$(awk '$1 == "k8s.io/client-go" { print $2; exit }' "${gomod}")"
[[ "${client_go}" =~ ^v0\.([0-9]+)\. ]] || die "cannot find the k8s.io/client-go version in ${gomod}"
k8s_minor="${BASH_REMATCH[1]}"
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  ldflags+=" -X ${pkg}.k8sVersionMajor=1 -X ${pkg}.k8sVersionMinor=${k8s_minor}"
done

if ! GOBIN="${tmp_bin}" CGO_ENABLED=0 \
    go install -trimpath -ldflags "${ldflags}" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" >&2; then
  die "go install helm.sh/helm/v3/cmd/helm@${HELM_VERSION} failed (see output above); check network access to ${goproxy} or set HELM_BIN"
fi
# Atomic move so a half-written binary is never picked up.
mv -f "${tmp_bin}/helm" "${CACHED_HELM}"
log "built $("${CACHED_HELM}" version --short 2>/dev/null) in $(( $(date +%s) - start ))s -> ${CACHED_HELM}"

cached_ok || die "built binary at ${CACHED_HELM} does not report ${HELM_VERSION}"
echo "${CACHED_HELM}"
