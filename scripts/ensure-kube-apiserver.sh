#!/usr/bin/env bash
# Print the path of a kube-apiserver binary on stdout; diagnostics go to stderr. The chart's install
# tests (test/helm/install.int.test.ts) run it on loopback with etcd (scripts/ensure-etcd.sh): a real
# Kubernetes API server, without kubelet or controllers.
#
# Resolution order (like scripts/ensure-promtool.sh):
#   1. $KUBE_APISERVER_BIN, if set (must be an executable kube-apiserver, otherwise this fails: an
#      explicit choice is never silently overridden).
#   2. A cached build at ${XDG_CACHE_HOME:-$HOME/.cache}/sms-worker/bin/kube-apiserver-<version>.
#   3. Build it once from the Go module proxy, then reuse it.
#
# Why a wrapper module: `go install k8s.io/kubernetes/cmd/kube-apiserver@v1.37.2` fails, because
# k8s.io/kubernetes requires its staging modules (k8s.io/api, k8s.io/apiserver, …) at v0.0.0 and
# points them at ./staging by `replace`, which only applies inside that repository. A throwaway
# module requiring k8s.io/kubernetes and replacing each staging module by its published v0.<minor>.<patch>
# builds the same binary: measured 3.5 minutes with empty Go module and build caches on two cores
# (4.5 minutes inside a cold `npm run tools:ensure`); warm, nothing is rebuilt.
# The version is stamped by ldflags like Kubernetes' own build does: without it the server reports
# v0.0.0 and Helm refuses the chart's `kubeVersion: >=1.25.0-0`.
#
# Override the pinned version with KUBE_APISERVER_VERSION=v1.x.y.
set -euo pipefail

KUBE_VERSION="${KUBE_APISERVER_VERSION:-v1.37.2}"
CACHE_ROOT="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/sms-worker"
CACHE_BIN_DIR="${CACHE_ROOT}/bin"
CACHED_BIN="${CACHE_BIN_DIR}/kube-apiserver-${KUBE_VERSION}"

log() { printf 'ensure-kube-apiserver: %s\n' "$*" >&2; }
die() { printf 'ensure-kube-apiserver: error: %s\n' "$*" >&2; exit 1; }

[[ "${KUBE_VERSION}" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || die "KUBE_APISERVER_VERSION=${KUBE_VERSION} is not of the form v1.MINOR.PATCH"
KUBE_MINOR="${BASH_REMATCH[1]}"
STAGING_VERSION="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"

# reports <path> [version]: the binary runs and says "Kubernetes <version>" (any v1.x without one).
reports() {
  local answer
  answer="$("$1" --version 2>&1 || true)"
  if [[ -n "${2:-}" ]]; then
    [[ "${answer}" == "Kubernetes $2" ]]
  else
    [[ "${answer}" == "Kubernetes v1."* ]]
  fi
}

if [[ -n "${KUBE_APISERVER_BIN:-}" ]]; then
  [[ -x "${KUBE_APISERVER_BIN}" ]] || die "KUBE_APISERVER_BIN=${KUBE_APISERVER_BIN} is not an executable file"
  reports "${KUBE_APISERVER_BIN}" || die "KUBE_APISERVER_BIN=${KUBE_APISERVER_BIN} does not report a Kubernetes v1.x version"
  echo "${KUBE_APISERVER_BIN}"
  exit 0
fi

cached_ok() { [[ -x "${CACHED_BIN}" ]] && reports "${CACHED_BIN}" "${KUBE_VERSION}"; }

if cached_ok; then
  echo "${CACHED_BIN}"
  exit 0
fi

command -v go >/dev/null 2>&1 \
  || die "no kube-apiserver found (KUBE_APISERVER_BIN unset, none at ${CACHED_BIN}) and Go is not installed to build one"

goproxy="$(go env GOPROXY 2>/dev/null || true)"
if [[ "${goproxy}" == "off" ]]; then
  die "GOPROXY=off: cannot download k8s.io/kubernetes@${KUBE_VERSION}; set GOPROXY or KUBE_APISERVER_BIN"
fi

mkdir -p "${CACHE_BIN_DIR}"
# Serialise concurrent builds (parallel test workers, several checkouts) on a lock file.
exec 9>"${CACHE_ROOT}/kube-apiserver-build.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
  if cached_ok; then
    echo "${CACHED_BIN}"
    exit 0
  fi
fi

log "building kube-apiserver ${KUBE_VERSION} from ${goproxy}; this takes 4-5 minutes the first time"
start="$(date +%s)"
work="$(mktemp -d "${CACHE_ROOT}/kube-apiserver-build.XXXXXX")"
trap 'rm -rf "${work}"' EXIT

# The staging modules are the ones k8s.io/kubernetes' go.mod points at ./staging/src/….
gomod="$(cd "${work}" && go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" 2>&1 \
  | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')" || true
[[ -n "${gomod}" && -f "${gomod}" ]] \
  || die "cannot download k8s.io/kubernetes@${KUBE_VERSION} from ${goproxy} (is the version right? is the proxy reachable?)"
mapfile -t staging < <(sed -n 's|^[[:space:]]*\(k8s\.io/[A-Za-z0-9._/-]*\)[[:space:]]*=>[[:space:]]*\./staging/.*$|\1|p' "${gomod}")
(( ${#staging[@]} > 10 )) || die "found only ${#staging[@]} staging modules in ${gomod}; its layout changed?"

{
  printf 'module sms-worker.local/kube-apiserver-build\n\ngo 1.26\n\nrequire k8s.io/kubernetes %s\n\n' "${KUBE_VERSION}"
  for module in "${staging[@]}"; do
    printf 'replace %s => %s %s\n' "${module}" "${module}" "${STAGING_VERSION}"
  done
} >"${work}/go.mod"
cat >"${work}/main.go" <<'EOF'
// The kube-apiserver command, built outside the Kubernetes repository (see scripts/ensure-kube-apiserver.sh).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
EOF

version_pkg=k8s.io/component-base/version
ldflags="-s -w -X ${version_pkg}.gitVersion=${KUBE_VERSION} -X ${version_pkg}.gitMajor=1 -X ${version_pkg}.gitMinor=${KUBE_MINOR}"
ldflags+=" -X ${version_pkg}.gitTreeState=clean -X ${version_pkg}.buildDate=1970-01-01T00:00:00Z"
(
  cd "${work}"
  GOFLAGS=-mod=mod go mod tidy >&2 \
    || die "resolving k8s.io/kubernetes@${KUBE_VERSION} with staging modules at ${STAGING_VERSION} failed (see above); check ${goproxy}"
  CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "${ldflags}" -o "${work}/kube-apiserver" . >&2 \
    || die "go build of kube-apiserver failed (see above)"
)
# Atomic move so a half-written binary is never picked up.
mv -f "${work}/kube-apiserver" "${CACHED_BIN}"
log "built $("${CACHED_BIN}" --version 2>&1) in $(( $(date +%s) - start ))s -> ${CACHED_BIN}"

cached_ok || die "built binary at ${CACHED_BIN} does not report Kubernetes ${KUBE_VERSION}"
echo "${CACHED_BIN}"
