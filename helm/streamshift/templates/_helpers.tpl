{{/* The release's full name: the release name, with "-streamshift" unless it says so already. */}}
{{- define "streamshift.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "streamshift.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "streamshift.labels" -}}
{{ include "streamshift.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "streamshift.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "streamshift.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The namespaces whose StreamQueries reference the chart's Secrets. */}}
{{- define "streamshift.secretNamespaces" -}}
{{- if .Values.watchNamespaces -}}
{{- toJson .Values.watchNamespaces -}}
{{- else -}}
{{- toJson (list .Release.Namespace) -}}
{{- end -}}
{{- end -}}

{{- define "streamshift.operatorImage" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "streamshift.workerImage" -}}
{{- printf "%s:%s" .Values.worker.image.repository (default .Chart.AppVersion .Values.worker.image.tag) -}}
{{- end -}}

{{/* kopf's verbosity flag for .Values.logLevel (info is kopf's default: no flag; values.schema.json
admits only the three levels). */}}
{{- define "streamshift.logFlag" -}}
{{- $flags := dict "warning" "--quiet" "info" "" "debug" "--verbose" -}}
{{- get $flags .Values.logLevel -}}
{{- end -}}
