#!/usr/bin/env bash
# Print the path of an etcd server binary on stdout; diagnostics go to stderr. The chart's install
# tests run it on loopback as the storage of kube-apiserver (scripts/ensure-kube-apiserver.sh).
#
# Resolution order:
#   1. $ETCD_BIN, if set (must be an executable etcd server, otherwise this fails: an explicit choice
#      is never silently overridden).
#   2. `etcd` on PATH, if it is etcd 3.4 or later (Debian bookworm's etcd-server is 3.4.23, which
#      kube-apiserver v1.37 runs on).
#   3. As root with apt-get: `apt-get install etcd-server` (seconds; `apt-get update` first when the
#      package lists do not know it). The package's service is not started in a container
#      (policy-rc.d); nothing here relies on it, the tests start their own etcd.
#   4. Otherwise (or with ETCD_FROM=go): a cached build at
#      ${XDG_CACHE_HOME:-$HOME/.cache}/sms-worker/bin/etcd-<version>, built once from the Go module
#      proxy through a wrapper module around go.etcd.io/etcd/server/v3's etcdmain (the repository's
#      root module cannot be `go install`ed: it points its submodules at ./ by `replace`); about a
#      minute on two cores.
#
# Override the Go-built version with ETCD_GO_VERSION=v3.x.y.
set -euo pipefail

ETCD_GO_VERSION="${ETCD_GO_VERSION:-v3.6.16}"
ETCD_FROM="${ETCD_FROM:-auto}"
CACHE_ROOT="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/sms-worker"
CACHE_BIN_DIR="${CACHE_ROOT}/bin"
CACHED_BIN="${CACHE_BIN_DIR}/etcd-${ETCD_GO_VERSION}"

log() { printf 'ensure-etcd: %s\n' "$*" >&2; }
die() { printf 'ensure-etcd: error: %s\n' "$*" >&2; exit 1; }

case "${ETCD_FROM}" in
  auto | go) ;;
  *) die "ETCD_FROM=${ETCD_FROM}: expected auto (PATH, then apt-get, then Go) or go (the Go build only)" ;;
esac

# etcd_version <path>: "3.4.23" etc. for a working etcd server, empty otherwise.
etcd_version() {
  local answer
  answer="$("$1" --version 2>/dev/null || true)"
  sed -n 's/^etcd Version: \([0-9][0-9.]*\).*$/\1/p' <<<"${answer}" | head -n 1
}

# recent_enough <version>: 3.4 or later.
recent_enough() {
  [[ "$1" =~ ^([0-9]+)\.([0-9]+)\. ]] || return 1
  (( BASH_REMATCH[1] > 3 || (BASH_REMATCH[1] == 3 && BASH_REMATCH[2] >= 4) ))
}

if [[ -n "${ETCD_BIN:-}" ]]; then
  [[ -x "${ETCD_BIN}" ]] || die "ETCD_BIN=${ETCD_BIN} is not an executable file"
  recent_enough "$(etcd_version "${ETCD_BIN}")" || die "ETCD_BIN=${ETCD_BIN} is not an etcd 3.4+ server"
  echo "${ETCD_BIN}"
  exit 0
fi

cached_ok() { [[ -x "${CACHED_BIN}" && "$(etcd_version "${CACHED_BIN}")" == "${ETCD_GO_VERSION#v}" ]]; }

if [[ "${ETCD_FROM}" == auto ]]; then
  if path_etcd="$(command -v etcd 2>/dev/null)" && recent_enough "$(etcd_version "${path_etcd}")"; then
    echo "${path_etcd}"
    exit 0
  fi
  if cached_ok; then
    echo "${CACHED_BIN}"
    exit 0
  fi
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    mkdir -p "${CACHE_ROOT}"
    exec 9>"${CACHE_ROOT}/etcd-install.lock"
    command -v flock >/dev/null 2>&1 && flock 9
    if ! path_etcd="$(command -v etcd 2>/dev/null)"; then
      log "installing Debian's etcd-server with apt-get"
      export DEBIAN_FRONTEND=noninteractive
      if ! apt-get install -y --no-install-recommends etcd-server >&2; then
        log "apt-get install failed; updating the package lists and trying once more"
        apt-get update >&2 && apt-get install -y --no-install-recommends etcd-server >&2 \
          || log "apt-get could not install etcd-server; building etcd from the Go module proxy instead"
      fi
    fi
    if path_etcd="$(command -v etcd 2>/dev/null)" && recent_enough "$(etcd_version "${path_etcd}")"; then
      log "using $("${path_etcd}" --version 2>/dev/null | head -n 1) at ${path_etcd}"
      echo "${path_etcd}"
      exit 0
    fi
  fi
fi

if cached_ok; then
  echo "${CACHED_BIN}"
  exit 0
fi

command -v go >/dev/null 2>&1 || die "no etcd found (ETCD_BIN unset, none on PATH, apt-get unusable) and Go is not installed to build one"
goproxy="$(go env GOPROXY 2>/dev/null || true)"
[[ "${goproxy}" != "off" ]] || die "GOPROXY=off: cannot download go.etcd.io/etcd/server/v3@${ETCD_GO_VERSION}; set GOPROXY or ETCD_BIN"

mkdir -p "${CACHE_BIN_DIR}"
exec 8>"${CACHE_ROOT}/etcd-build.lock"
if command -v flock >/dev/null 2>&1; then
  flock 8
  if cached_ok; then
    echo "${CACHED_BIN}"
    exit 0
  fi
fi

log "building etcd ${ETCD_GO_VERSION} from ${goproxy}; this takes about a minute the first time"
start="$(date +%s)"
work="$(mktemp -d "${CACHE_ROOT}/etcd-build.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
printf 'module sms-worker.local/etcd-build\n\ngo 1.25\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "${ETCD_GO_VERSION}" >"${work}/go.mod"
cat >"${work}/main.go" <<'EOF'
// The etcd server command, built outside the etcd repository (see scripts/ensure-etcd.sh).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
EOF
(
  cd "${work}"
  GOFLAGS=-mod=mod go mod tidy >&2 || die "resolving go.etcd.io/etcd/server/v3@${ETCD_GO_VERSION} failed (see above); check ${goproxy}"
  CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "${work}/etcd" . >&2 \
    || die "go build of etcd failed (see above)"
)
mv -f "${work}/etcd" "${CACHED_BIN}"
log "built etcd $(etcd_version "${CACHED_BIN}") in $(( $(date +%s) - start ))s -> ${CACHED_BIN}"
cached_ok || die "built binary at ${CACHED_BIN} does not report etcd ${ETCD_GO_VERSION#v}"
echo "${CACHED_BIN}"
