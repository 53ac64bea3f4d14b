{{/* The receipts receiver: its own name, so its pods never match the worker's selectors. */}}
{{- define "sms-worker.receipts.fullname" -}}
{{- printf "%s-receipts" (include "sms-worker.fullname" . | trunc 54 | trimSuffix "-") -}}
{{- end }}

{{/* PromQL label matcher for the receiver's series (its ServiceMonitor's job is its Service name). */}}
{{- define "sms-worker.receipts.metricSelector" -}}
{{- if .Values.prometheusRule.receiptsMetricSelector -}}
{{- .Values.prometheusRule.receiptsMetricSelector -}}
{{- else -}}
{{- printf "namespace=%q, job=%q" .Release.Namespace (include "sms-worker.receipts.fullname" .) -}}
{{- end -}}
{{- end }}

{{- define "sms-worker.receipts.selectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-receipts" (include "sms-worker.name" .) }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "sms-worker.receipts.labels" -}}
helm.sh/chart: {{ include "sms-worker.chart" . }}
{{ include "sms-worker.receipts.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/component: receipts
app.kubernetes.io/part-of: sms-worker
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "sms-worker.receipts.secretName" -}}
{{- if .Values.receipts.existingSecret.name }}
{{- .Values.receipts.existingSecret.name }}
{{- else }}
{{- include "sms-worker.receipts.fullname" . }}
{{- end }}
{{- end }}

{{- define "sms-worker.receipts.secretKeys" -}}
{{- if .Values.receipts.existingSecret.name -}}
{{- toYaml .Values.receipts.existingSecret.keys -}}
{{- else -}}
pathToken: RECEIPTS_PATH_TOKEN
basicAuthPassword: RECEIPTS_BASIC_PASSWORD
{{- end -}}
{{- end }}

{{- define "sms-worker.receipts.trustedProxyHops" -}}
{{- if kindIs "invalid" .Values.receipts.trustedProxyHops -}}
{{- if .Values.receipts.ingress.enabled }}1{{ else }}0{{ end -}}
{{- else -}}
{{- int .Values.receipts.trustedProxyHops -}}
{{- end -}}
{{- end }}

{{/* Cross-field rules of the receiver; included from its Deployment. */}}
{{- define "sms-worker.receipts.validate" -}}
{{- $r := .Values.receipts -}}
{{- if not $r.existingSecret.name -}}
{{- if and (not $r.secrets.pathToken) (not $r.secrets.basicAuthPassword) -}}
{{- fail "receipts.enabled needs receipts.secrets.pathToken and/or receipts.secrets.basicAuthPassword (with receipts.basicAuthUsername), or receipts.existingSecret.name: the receiver never accepts unauthenticated reports" -}}
{{- end -}}
{{- if and $r.secrets.basicAuthPassword (not $r.basicAuthUsername) -}}
{{- fail "receipts.secrets.basicAuthPassword is set but receipts.basicAuthUsername is empty" -}}
{{- end -}}
{{- end -}}
{{- if eq (int $r.port) (int $r.httpPort) -}}
{{- fail "receipts.port and receipts.httpPort must differ: reports and metrics are served apart" -}}
{{- end -}}
{{- if and $r.autoscaling.enabled (gt (int $r.autoscaling.minReplicas) (int $r.autoscaling.maxReplicas)) -}}
{{- fail "receipts.autoscaling.minReplicas must not exceed receipts.autoscaling.maxReplicas" -}}
{{- end -}}
{{- end }}
