{{/* The labels of every object, as the kustomize base's plus Helm's. */}}
{{- define "wasm-ccm.labels" -}}
{{ include "wasm-ccm.selectorLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The labels the Deployment selects its pods by: the kustomize base's. */}}
{{- define "wasm-ccm.selectorLabels" -}}
app.kubernetes.io/name: wasm-ccm
app.kubernetes.io/component: cloud-controller-manager
{{- end -}}

{{/* Whether the chart makes the ConfigMap wasm-ccm-provider. */}}
{{- define "wasm-ccm.providerConfigMap" -}}
{{- if or .Values.providersFile.enabled (ne .Values.provider.source "configMap") }}true{{ end -}}
{{- end -}}

{{/* The name of the ConfigMap mounted at /etc/wasm-ccm/provider. */}}
{{- define "wasm-ccm.providerConfigMapName" -}}
{{- if include "wasm-ccm.providerConfigMap" . }}wasm-ccm-provider{{ else }}{{ .Values.provider.configMapName }}{{ end -}}
{{- end -}}

{{/*
Values that cannot work together are refused here, each with what to change.
*/}}
{{- define "wasm-ccm.validate" -}}
{{- $p := .Values.provider -}}
{{- if not (has $p.source (list "chart" "configMap" "oci")) -}}
{{- fail (printf "provider.source must be chart, configMap or oci, not %q" $p.source) -}}
{{- end -}}
{{- if and (eq $p.source "oci") (not $p.oci) -}}
{{- fail "provider.source=oci needs provider.oci (oci://registry/repository:tag)" -}}
{{- end -}}
{{- if and $p.oci (ne $p.source "oci") -}}
{{- fail (printf "provider.oci is set but provider.source is %s: set provider.source=oci, or unset provider.oci" $p.source) -}}
{{- end -}}
{{- if and $p.oci (not (hasPrefix "oci://" $p.oci)) -}}
{{- fail (printf "provider.oci must start with oci://, not %q" $p.oci) -}}
{{- end -}}
{{- if and (eq $p.source "configMap") (not $p.configMapName) -}}
{{- fail "provider.source=configMap needs provider.configMapName, the ConfigMap holding provider.wasm and cloud-config.json" -}}
{{- end -}}
{{- if and $p.configMapName (ne $p.source "configMap") -}}
{{- fail (printf "provider.configMapName is set but provider.source is %s: set provider.source=configMap, or unset provider.configMapName" $p.source) -}}
{{- end -}}
{{- if and $p.registryConfigSecret (ne $p.source "oci") -}}
{{- fail "provider.registryConfigSecret is for provider.source=oci only" -}}
{{- end -}}
{{- if and $p.sha256 (eq $p.source "oci") -}}
{{- fail "provider.sha256 pins a file or ConfigMap provider; an OCI provider is pinned by its digest in provider.oci (@sha256:...)" -}}
{{- end -}}
{{- if and $p.minimumVersion (ne $p.source "oci") -}}
{{- fail "provider.minimumVersion needs a signed OCI provider (provider.source=oci): a file or ConfigMap has no signed version" -}}
{{- end -}}
{{- $chartFiles := or .Values.providersFile.enabled (eq $p.source "chart") -}}
{{- if and $chartFiles (not (.Files.Get "provider/provider.wasm")) -}}
{{- fail "provider.source=chart (or providersFile.enabled) needs the component in the chart: copy it to provider/provider.wasm in the chart's directory, or set provider.source=configMap or oci" -}}
{{- end -}}
{{- if and $chartFiles $p.requireSignature (not (.Files.Get "provider/provider.wasm.sig")) -}}
{{- fail "provider.requireSignature needs the signature beside the component: cosign sign-blob --key cosign.key --output-signature provider/provider.wasm.sig provider/provider.wasm, or set provider.requireSignature=false" -}}
{{- end -}}
{{- if and $p.requireSignature (not .Values.trust.publicKey) -}}
{{- fail "provider.requireSignature needs the key providers are signed with: --set-file trust.publicKey=cosign.pub, or set provider.requireSignature=false" -}}
{{- end -}}
{{- if and .Values.providersFile.enabled (or $p.oci $p.configMapName) -}}
{{- fail "providersFile.enabled replaces the single provider: unset provider.oci and provider.configMapName and name each provider's source in providersFile.providers" -}}
{{- end -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) -}}
{{- fail (printf "replicas=%d needs leaderElection.enabled: without it every replica would run the controllers" (int .Values.replicas)) -}}
{{- end -}}
{{- if and .Values.podDisruptionBudget.enabled (lt (int .Values.replicas) 2) -}}
{{- fail "podDisruptionBudget.enabled needs replicas >= 2: with one replica a drain takes wasm-ccm down whatever the budget says; set podDisruptionBudget.enabled=false" -}}
{{- end -}}
{{- if and .Values.controllerIdentities.enabled (ne .Release.Namespace "kube-system") -}}
{{- fail (printf "controllerIdentities.enabled needs the release in kube-system, where the controllers' ServiceAccounts are made, not %s" .Release.Namespace) -}}
{{- end -}}
{{- if and (or .Values.monitoring.serviceMonitor.enabled .Values.monitoring.prometheusRule.enabled) (eq (int .Values.admin.securePort) 0) -}}
{{- fail "monitoring needs the admin server's /metrics: admin.securePort must not be 0" -}}
{{- end -}}
{{- if and .Values.cluster.configureRoutes (not .Values.cluster.cidr) -}}
{{- fail "cluster.configureRoutes needs cluster.cidr, the cluster's pod network" -}}
{{- end -}}
{{- if and .Values.compileCache.enabled (not .Values.compileCache.maxSize) -}}
{{- fail "compileCache.enabled needs compileCache.maxSize within compileCache.sizeLimit" -}}
{{- end -}}
{{- end -}}
