#!/usr/bin/env bash
# Print the path of a directory holding the CustomResourceDefinitions the chart's optional objects
# need, as their projects ship them; diagnostics go to stderr:
#   keda.sh_scaledobjects.yaml                      ScaledObject   (KEDA, keda.enabled)
#   monitoring.coreos.com_servicemonitors.yaml      ServiceMonitor (Prometheus operator, serviceMonitor.enabled)
#   monitoring.coreos.com_prometheusrules.yaml      PrometheusRule (Prometheus operator, prometheusRule.enabled)
# The chart's install tests (test/helm/install.int.test.ts) create them on a real API server before
# installing the chart with everything on.
#
# The files come from the projects' Go modules on the module proxy (`go mod download`), which ship
# the generated CRDs: github.com/kedacore/keda/v2 in config/crd/bases/, and
# github.com/prometheus-operator/prometheus-operator in example/prometheus-operator-crd/. They are
# copied to ${XDG_CACHE_HOME:-$HOME/.cache}/sms-worker/crds/keda-<v>_prometheus-operator-<v>/, so a
# version bump fetches anew and an unchanged one fetches nothing.
#
# Override the pinned versions with KEDA_VERSION=v2.x.y and PROMETHEUS_OPERATOR_VERSION=v0.x.y.
set -euo pipefail

KEDA_VERSION="${KEDA_VERSION:-v2.21.0}"
PROMETHEUS_OPERATOR_VERSION="${PROMETHEUS_OPERATOR_VERSION:-v0.85.0}"
CACHE_ROOT="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/sms-worker"
CRD_DIR="${CACHE_ROOT}/crds/keda-${KEDA_VERSION}_prometheus-operator-${PROMETHEUS_OPERATOR_VERSION}"

log() { printf 'ensure-crds: %s\n' "$*" >&2; }
die() { printf 'ensure-crds: error: %s\n' "$*" >&2; exit 1; }

# module|path in the module|CRD name (metadata.name)
CRDS=(
  "github.com/kedacore/keda/v2@${KEDA_VERSION}|config/crd/bases/keda.sh_scaledobjects.yaml|scaledobjects.keda.sh"
  "github.com/prometheus-operator/prometheus-operator@${PROMETHEUS_OPERATOR_VERSION}|example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml|servicemonitors.monitoring.coreos.com"
  "github.com/prometheus-operator/prometheus-operator@${PROMETHEUS_OPERATOR_VERSION}|example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml|prometheusrules.monitoring.coreos.com"
)

# is_crd <file> <name>: the file is the CustomResourceDefinition of that name.
is_crd() {
  [[ -s "$1" ]] && grep -q '^kind: CustomResourceDefinition$' "$1" && grep -q "^  name: $2\$" "$1"
}

complete() {
  local entry
  for entry in "${CRDS[@]}"; do
    IFS='|' read -r _ file name <<<"${entry}"
    is_crd "${CRD_DIR}/$(basename "${file}")" "${name}" || return 1
  done
}

if complete; then
  echo "${CRD_DIR}"
  exit 0
fi

command -v go >/dev/null 2>&1 || die "the CRDs are not cached at ${CRD_DIR} and Go is not installed to download them"
goproxy="$(go env GOPROXY 2>/dev/null || true)"
[[ "${goproxy}" != "off" ]] || die "GOPROXY=off: cannot download the KEDA and Prometheus operator modules; set GOPROXY"

mkdir -p "${CACHE_ROOT}/crds"
exec 9>"${CACHE_ROOT}/crds.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
  if complete; then
    echo "${CRD_DIR}"
    exit 0
  fi
fi

start="$(date +%s)"
staging="$(mktemp -d "${CACHE_ROOT}/crds/download.XXXXXX")"
trap 'rm -rf "${staging}"' EXIT
declare -A module_dirs=()
for entry in "${CRDS[@]}"; do
  IFS='|' read -r module file name <<<"${entry}"
  if [[ -z "${module_dirs[${module}]:-}" ]]; then
    log "downloading ${module} from ${goproxy}"
    # Outside any module (the temp dir), so no go.mod or go.work around interferes.
    dir="$(cd "${staging}" && go mod download -json "${module}" 2>&1 \
      | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')" || true
    [[ -n "${dir}" && -d "${dir}" ]] || die "cannot download ${module} from ${goproxy} (is the version right? is the proxy reachable?)"
    module_dirs[${module}]="${dir}"
  fi
  source_file="${module_dirs[${module}]}/${file}"
  is_crd "${source_file}" "${name}" || die "${module} has no CustomResourceDefinition ${name} at ${file}"
  cp "${source_file}" "${staging}/$(basename "${file}")"
  chmod 0644 "${staging}/$(basename "${file}")"
done
# Publish the complete set at once.
rm -rf "${CRD_DIR}"
mkdir -p "${CRD_DIR}"
mv "${staging}"/*.yaml "${CRD_DIR}/"
log "fetched ${#CRDS[@]} CRDs (KEDA ${KEDA_VERSION}, Prometheus operator ${PROMETHEUS_OPERATOR_VERSION}) in $(( $(date +%s) - start ))s -> ${CRD_DIR}"
complete || die "the CRDs at ${CRD_DIR} are incomplete"
echo "${CRD_DIR}"
