{{/* Chart name, truncated to the DNS label limit. */}}
{{- define "sms-worker.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name. */}}
{{- define "sms-worker.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "sms-worker.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels: stable for the lifetime of a release. */}}
{{- define "sms-worker.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sms-worker.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Standard labels. */}}
{{- define "sms-worker.labels" -}}
helm.sh/chart: {{ include "sms-worker.chart" . }}
{{ include "sms-worker.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/component: worker
app.kubernetes.io/part-of: sms-worker
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "sms-worker.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "sms-worker.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "sms-worker.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end }}

{{/* Name of the Secret the pod reads credentials from (chart-created or existing). */}}
{{- define "sms-worker.secretName" -}}
{{- if .Values.existingSecret.name }}
{{- .Values.existingSecret.name }}
{{- else }}
{{- include "sms-worker.fullname" . }}
{{- end }}
{{- end }}

{{/* Key names inside that Secret. The chart-created Secret uses the env var names. */}}
{{- define "sms-worker.secretKeys" -}}
{{- if .Values.existingSecret.name -}}
{{- toYaml .Values.existingSecret.keys -}}
{{- else -}}
providerAccessKeyId: PROVIDER_ACCESS_KEY_ID
providerAccessKeySecret: PROVIDER_ACCESS_KEY_SECRET
kafkaSaslPassword: KAFKA_SASL_PASSWORD
schemaRegistryPassword: SCHEMA_REGISTRY_PASSWORD
{{- end -}}
{{- end }}

{{/*
The secrets the worker reads from files (secretsAsFiles): variable name → key in the Secret. The
chart's own Secret holds a key only for a value given; an existing Secret, every key named.
*/}}
{{- define "sms-worker.secretFiles" -}}
{{- $keys := include "sms-worker.secretKeys" . | fromYaml -}}
{{- $given := dict "providerAccessKeyId" true "providerAccessKeySecret" .Values.secrets.providerAccessKeySecret "kafkaSaslPassword" .Values.secrets.kafkaSaslPassword "schemaRegistryPassword" .Values.secrets.schemaRegistryPassword -}}
{{- $variables := dict "providerAccessKeyId" "PROVIDER_ACCESS_KEY_ID" "providerAccessKeySecret" "PROVIDER_ACCESS_KEY_SECRET" "kafkaSaslPassword" "KAFKA_SASL_PASSWORD" "schemaRegistryPassword" "SCHEMA_REGISTRY_PASSWORD" -}}
{{- range $name, $variable := $variables -}}
{{- $key := get $keys $name -}}
{{- if and $key (or $.Values.existingSecret.name (get $given $name)) }}
{{ $variable }}: {{ $key }}
{{- end -}}
{{- end -}}
{{- end }}

{{/* The port of `host:port` (an IPv6 host in brackets). */}}
{{- define "sms-worker.hostPort" -}}
{{- regexFind "[0-9]+$" . -}}
{{- end }}

{{/* The port of a URL: given, or its scheme's (443 for https, 80 for http). */}}
{{- define "sms-worker.urlPort" -}}
{{- $u := urlParse . -}}
{{- if regexMatch ":[0-9]+$" $u.host -}}
{{- regexFind "[0-9]+$" $u.host -}}
{{- else if eq $u.scheme "https" -}}
443
{{- else -}}
80
{{- end -}}
{{- end }}

{{/* terminationGracePeriodSeconds: explicit (validated) or shutdownTimeoutSeconds + 15. */}}
{{- define "sms-worker.terminationGracePeriodSeconds" -}}
{{- $shutdown := int .Values.shutdownTimeoutSeconds -}}
{{- if kindIs "invalid" .Values.terminationGracePeriodSeconds -}}
{{- add $shutdown 15 -}}
{{- else -}}
{{- $grace := int .Values.terminationGracePeriodSeconds -}}
{{- if le $grace $shutdown -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be greater than shutdownTimeoutSeconds (%d): the kubelet would SIGKILL the worker before it finishes draining" $grace $shutdown) -}}
{{- end -}}
{{- $grace -}}
{{- end -}}
{{- end }}

{{/* PromQL label matcher selecting this release's series. */}}
{{- define "sms-worker.metricSelector" -}}
{{- if .Values.prometheusRule.metricSelector -}}
{{- .Values.prometheusRule.metricSelector -}}
{{- else -}}
{{- printf "namespace=%q, job=%q" .Release.Namespace (include "sms-worker.fullname" .) -}}
{{- end -}}
{{- end }}

{{/* The intent ledger of topics.priorityCommand: topics.priorityLedger, or <priorityCommand>.ledger (each command topic has its own). */}}
{{- define "sms-worker.priorityLedgerTopic" -}}
{{- .Values.topics.priorityLedger | default (printf "%s.ledger" .Values.topics.priorityCommand) -}}
{{- end }}

{{/* Consumer group of topics.priorityCommand: priorityConsumerGroup, or <consumerGroup>-priority. */}}
{{- define "sms-worker.priorityConsumerGroup" -}}
{{- .Values.priorityConsumerGroup | default (printf "%s-priority" .Values.consumerGroup) -}}
{{- end }}

{{/*
Cross-field validation that values.schema.json cannot express well. Included from the
Deployment so every render runs it.
*/}}
{{- define "sms-worker.validate" -}}
{{- if and .Values.autoscaling.enabled .Values.keda.enabled -}}
{{- fail "autoscaling.enabled and keda.enabled are mutually exclusive: both would fight over the Deployment's replica count (KEDA creates its own HPA)" -}}
{{- end -}}
{{- $partitions := int .Values.topics.partitions -}}
{{- if and .Values.keda.enabled (gt (int .Values.keda.maxReplicaCount) $partitions) -}}
{{- fail (printf "keda.maxReplicaCount (%d) must not exceed topics.partitions (%d): extra consumers would sit idle" (int .Values.keda.maxReplicaCount) $partitions) -}}
{{- end -}}
{{- if and .Values.keda.enabled (gt (int .Values.keda.minReplicaCount) (int .Values.keda.maxReplicaCount)) -}}
{{- fail "keda.minReplicaCount must not exceed keda.maxReplicaCount" -}}
{{- end -}}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.maxReplicas) $partitions) -}}
{{- fail (printf "autoscaling.maxReplicas (%d) must not exceed topics.partitions (%d): extra consumers would sit idle" (int .Values.autoscaling.maxReplicas) $partitions) -}}
{{- end -}}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) -}}
{{- fail "autoscaling.minReplicas must not exceed autoscaling.maxReplicas" -}}
{{- end -}}
{{- if not .Values.existingSecret.name -}}
{{- if not .Values.secrets.providerAccessKeyId -}}
{{- fail "secrets.providerAccessKeyId is required (or set existingSecret.name to use your own Secret)" -}}
{{- end -}}
{{- if and (ne .Values.kafka.sasl.mechanism "none") (not .Values.secrets.kafkaSaslPassword) -}}
{{- fail "kafka.sasl.mechanism is set but secrets.kafkaSaslPassword is empty (or set existingSecret.name)" -}}
{{- end -}}
{{- end -}}
{{- if and (ne .Values.kafka.sasl.mechanism "none") (not .Values.kafka.sasl.username) -}}
{{- fail "kafka.sasl.mechanism is set but kafka.sasl.username is empty" -}}
{{- end -}}
{{- if and .Values.kafka.ssl.secretName (not .Values.kafka.ssl.enabled) -}}
{{- fail "kafka.ssl.secretName is set but kafka.ssl.enabled is false" -}}
{{- end -}}
{{- if and .Values.kafka.ssl.secretName (ne (empty .Values.kafka.ssl.certKey) (empty .Values.kafka.ssl.keyKey)) -}}
{{- fail "kafka.ssl.certKey and kafka.ssl.keyKey must be set together (client certificate and key)" -}}
{{- end -}}
{{- range $k, $_ := .Values.extraConfig -}}
{{- if or (has $k (list "PROVIDER_ACCESS_KEY_ID" "PROVIDER_ACCESS_KEY_SECRET" "KAFKA_SASL_PASSWORD" "SCHEMA_REGISTRY_PASSWORD")) (regexMatch "(?i)(PASSWORD|SECRET|TOKEN)" $k) -}}
{{- fail (printf "extraConfig.%s looks like a secret; extraConfig is rendered into a ConfigMap. Use secrets.* / existingSecret or extraEnv with valueFrom.secretKeyRef" $k) -}}
{{- end -}}
{{- end -}}
{{- with $priority := .Values.topics.priorityCommand -}}
{{- range $name, $topic := dict "command" $.Values.topics.command "result" $.Values.topics.result "deadLetter" $.Values.topics.deadLetter "ledger" $.Values.topics.ledger -}}
{{- if eq $topic $priority -}}
{{- fail (printf "topics.priorityCommand (%s) must differ from topics.%s: the priority topic is a command topic of its own, consumed in its own group" $priority $name) -}}
{{- end -}}
{{- end -}}
{{- $ledger := include "sms-worker.priorityLedgerTopic" $ -}}
{{- range $name, $topic := dict "command" $.Values.topics.command "result" $.Values.topics.result "deadLetter" $.Values.topics.deadLetter "ledger" $.Values.topics.ledger "priorityCommand" $priority -}}
{{- if eq $topic $ledger -}}
{{- fail (printf "the priority topic's ledger (%s) must differ from topics.%s: each command topic has a ledger of its own" $ledger $name) -}}
{{- end -}}
{{- end -}}
{{- if eq (include "sms-worker.priorityConsumerGroup" $) $.Values.consumerGroup -}}
{{- fail (printf "priorityConsumerGroup (%s) must differ from consumerGroup: each command topic is consumed in its own group" $.Values.consumerGroup) -}}
{{- end -}}
{{- end -}}
{{- $_ := include "sms-worker.terminationGracePeriodSeconds" . -}}
{{- end }}

{{/*
resources.limits.memory in MiB (Ki, Mi, Gi, k, M, G or plain bytes), "" when not set or not understood.
*/}}
{{- define "sms-worker.memoryLimitMiB" -}}
{{- $m := toString (dig "limits" "memory" "" (.Values.resources | default dict)) -}}
{{- if regexMatch "^[0-9]+Gi$" $m -}}{{ mul (trimSuffix "Gi" $m | atoi) 1024 }}
{{- else if regexMatch "^[0-9]+Mi$" $m -}}{{ trimSuffix "Mi" $m | atoi }}
{{- else if regexMatch "^[0-9]+Ki$" $m -}}{{ div (trimSuffix "Ki" $m | atoi) 1024 }}
{{- else if regexMatch "^[0-9]+G$" $m -}}{{ div (mul (trimSuffix "G" $m | atoi) 1000000000) 1048576 }}
{{- else if regexMatch "^[0-9]+M$" $m -}}{{ div (mul (trimSuffix "M" $m | atoi) 1000000) 1048576 }}
{{- else if regexMatch "^[0-9]+k$" $m -}}{{ div (mul (trimSuffix "k" $m | atoi) 1000) 1048576 }}
{{- else if regexMatch "^[0-9]+$" $m -}}{{ div ($m | atoi) 1048576 }}
{{- end -}}
{{- end }}

{{/*
NODE_OPTIONS derived from the memory limit: the V8 old-space cap at heapPercentOfMemoryLimit of it,
and the young generation's semi-space (semiSpaceMiB) that a small cap needs.
Empty when there is no limit, the percentage is 0, or extraConfig sets NODE_OPTIONS itself.
*/}}
{{- define "sms-worker.nodeOptions" -}}
{{- $limit := include "sms-worker.memoryLimitMiB" . -}}
{{- $percent := int (.Values.heapPercentOfMemoryLimit | default 0) -}}
{{- if and (ne $limit "") (gt $percent 0) (not (hasKey (.Values.extraConfig | default dict) "NODE_OPTIONS")) -}}
--max-old-space-size={{ div (mul (atoi $limit) $percent) 100 }}
{{- with int (.Values.semiSpaceMiB | default 0) }} --max-semi-space-size={{ . }}{{ end }}
{{- end -}}
{{- end }}

{{/*
ACCOUNTS: the names of the further accounts (docs/accounts.md), comma-separated, in order.
*/}}
{{- define "sms-worker.accountNames" -}}
{{- $names := list -}}
{{- range .Values.accounts }}{{ $names = append $names .name }}{{ end -}}
{{- join "," $names -}}
{{- end }}
