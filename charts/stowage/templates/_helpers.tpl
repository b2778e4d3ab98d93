{{/* Chart name, overridable. */}}
{{- define "stowage.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name for the release's objects: the release name when it already contains the chart name. */}}
{{- define "stowage.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "stowage.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels that select the server pods; never change them after an install. */}}
{{- define "stowage.selectorLabels" -}}
app.kubernetes.io/name: {{ include "stowage.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end -}}

{{/* Labels for every object. */}}
{{- define "stowage.labels" -}}
app.kubernetes.io/name: {{ include "stowage.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: stowage
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ include "stowage.chart" . }}
{{- with .Values.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "stowage.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "stowage.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding BackupStorageLocation credentials: existingSecret, else the chart's own. */}}
{{- define "stowage.secretName" -}}
{{- if .Values.credentials.existingSecret -}}
{{- .Values.credentials.existingSecret -}}
{{- else -}}
{{- default (include "stowage.fullname" .) .Values.credentials.name -}}
{{- end -}}
{{- end -}}

{{- define "stowage.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
A location's credential: its own, else key "cloud" of the chart's Secret when credentials.useSecret.
Call with (dict "location" $entry "root" $).
*/}}
{{- define "stowage.credential" -}}
{{- if .location.credential -}}
credential:
  name: {{ required "configuration.*Location[].credential.name is required" .location.credential.name | quote }}
  key: {{ required "configuration.*Location[].credential.key is required" .location.credential.key | quote }}
{{- else if .root.Values.credentials.useSecret -}}
credential:
  name: {{ include "stowage.secretName" .root | quote }}
  key: cloud
{{- end -}}
{{- end -}}

{{/* Server flags from .Values.configuration: value key -> flag, rendered only when set. */}}
{{- define "stowage.configurationArgs" -}}
{{- $flags := dict
  "logLevel" "log-level"
  "logFormat" "log-format"
  "defaultBackupStorageLocation" "default-backup-storage-location"
  "defaultBackupTTL" "default-backup-ttl"
  "backupSyncPeriod" "backup-sync-period"
  "storeValidationFrequency" "store-validation-frequency"
  "garbageCollectionFrequency" "garbage-collection-frequency"
  "restoreResourcePriorities" "restore-resource-priorities"
  "clientQPS" "client-qps"
  "clientBurst" "client-burst"
  "clientPageSize" "client-page-size"
  "clientPageBytes" "client-page-bytes"
  "apiOutageTimeout" "api-outage-timeout"
  "concurrentBackups" "concurrent-backups"
  "concurrentRestores" "concurrent-restores"
  "pluginStartTimeout" "plugin-start-timeout"
  "pluginIdleTimeout" "plugin-idle-timeout"
  "terminationGracePeriod" "termination-grace-period"
  "heapGrowthPercent" "heap-growth-percent"
  "backupHeapGrowthPercent" "backup-heap-growth-percent"
  "maxItemBytes" "max-item-bytes"
  "csiSnapshotDeleteTimeout" "csi-snapshot-delete-timeout"
  "objectStoreOutageTimeout" "object-store-outage-timeout"
  "downloadAddress" "download-address"
  "downloadURL" "download-url"
-}}
{{- range $key := keys $flags | sortAlpha }}
{{- $value := get $.Values.configuration $key }}
{{- /* YAML numbers arrive as float64, which prints 16777216 as 1.6777216e+07: whole ones print as integers. */}}
{{- if and (kindIs "float64" $value) (eq $value (float64 (int64 $value))) }}
{{- $value = int64 $value }}
{{- end }}
{{- if or $value (eq (toString $value) "0") }}
- --{{ get $flags $key }}={{ $value }}
{{- end }}
{{- end }}
{{- end -}}

{{/* An emptyDir source from {sizeLimit}, as flow YAML. */}}
{{- define "stowage.emptyDir" -}}
{{- if .sizeLimit -}}
{{ printf "{sizeLimit: %s}" (.sizeLimit | quote) }}
{{- else -}}
{}
{{- end -}}
{{- end -}}

{{/* The trust mode (requester or cluster-admin); anything else fails the render. */}}
{{- define "stowage.trustMode" -}}
{{- $mode := .Values.trustMode | default "requester" -}}
{{- if not (has $mode (list "requester" "cluster-admin")) -}}
{{- fail (printf "trustMode must be requester or cluster-admin, not %q" $mode) -}}
{{- end -}}
{{- $mode -}}
{{- end -}}

{{/* The MutatingWebhookConfiguration the server publishes its CA bundle into (requester mode). */}}
{{- define "stowage.webhookConfigurationName" -}}
{{- include "stowage.fullname" . -}}
{{- end -}}

{{/* The download server's port: the one of configuration.downloadAddress (default :8086). */}}
{{- define "stowage.downloadPort" -}}
{{- $port := .Values.configuration.downloadAddress | default ":8086" | toString | splitList ":" | last -}}
{{- if not (regexMatch "^[0-9]+$" $port) -}}
{{- fail (printf "configuration.downloadAddress %q has no port number" .Values.configuration.downloadAddress) -}}
{{- end -}}
{{- int $port -}}
{{- end -}}

{{/* The Secret holding the install's signing key (signingKey.*): every location without its own spec.signing signs with it. */}}
{{- define "stowage.signingSecretName" -}}
{{- default (printf "%s-signing" (include "stowage.fullname" .)) .Values.signingKey.secretName }}
{{- end }}
