{{/* The labels every object carries. */}}
{{- define "crowd.labels" -}}
app.kubernetes.io/name: crowd
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}

{{/* crowd.shards is .Values.shards, checked: every shard-dependent object is made from it. */}}
{{- define "crowd.shards" -}}
{{- $n := int .Values.shards -}}
{{- if or (lt $n 1) (gt $n 64) -}}
{{- fail (printf "shards must be 1 to 64, not %v" .Values.shards) -}}
{{- end -}}
{{- if gt $n (int .Values.world.origins) -}}
{{- fail (printf "shards (%d) must not exceed world.origins (%v): a shard with no origin floods from nothing" $n .Values.world.origins) -}}
{{- end -}}
{{- $n -}}
{{- end }}

{{/* crowd.shardAddress is the cluster IP of shard .i's Service: services.firstAddress + i. */}}
{{- define "crowd.shardAddress" -}}
{{- $o := splitList "." .root.Values.services.firstAddress -}}
{{- if ne (len $o) 4 -}}
{{- fail (printf "services.firstAddress %q is no IPv4 address" .root.Values.services.firstAddress) -}}
{{- end -}}
{{- $last := add (atoi (index $o 3)) .i -}}
{{- if gt $last 254 -}}
{{- fail (printf "services.firstAddress %s + %d shards leaves its /24: choose a lower first address" .root.Values.services.firstAddress (int .root.Values.shards)) -}}
{{- end -}}
{{- printf "%s.%s.%s.%d" (index $o 0) (index $o 1) (index $o 2) $last -}}
{{- end }}

{{/* crowd.dnsRecord is CROWD_DNS_RECORD, the same in every shard: the SUT's name, and without
     advertise every origin k at the Service of its shard, (k-1) mod shards. */}}
{{- define "crowd.dnsRecord" -}}
{{- $n := int (include "crowd.shards" .) -}}
{{- $records := list (printf "%s=%s" .Values.sut.name .Values.sut.address) -}}
{{- if not .Values.advertise -}}
{{- range $k0 := until (int .Values.world.origins) -}}
{{- $host := replace "%d" (toString (add1 $k0)) $.Values.world.domain -}}
{{- $records = append $records (printf "%s=%s" $host (include "crowd.shardAddress" (dict "root" $ "i" (mod $k0 $n)))) -}}
{{- end -}}
{{- end -}}
{{- join "," $records -}}
{{- end }}

{{/* crowd.rate is the flood's rate per shard: flood.rate, or flood.totalRate split evenly. */}}
{{- define "crowd.rate" -}}
{{- $n := int (include "crowd.shards" .) -}}
{{- if and (gt (float64 .Values.flood.rate) 0.0) (gt (float64 .Values.flood.totalRate) 0.0) -}}
{{- fail "set flood.rate (per shard) or flood.totalRate (the fleet's), not both" -}}
{{- else if gt (float64 .Values.flood.totalRate) 0.0 -}}
{{- divf .Values.flood.totalRate $n -}}
{{- else if gt (float64 .Values.flood.rate) 0.0 -}}
{{- .Values.flood.rate -}}
{{- else -}}
{{- fail "flood.rate or flood.totalRate must be above 0" -}}
{{- end -}}
{{- end }}

{{/* crowd.advertiseRoute is the shell line that makes shard $JOB_COMPLETION_INDEX's slice of
     the advertise range local to its pod: the range cut into shards equal slices, as
     `crowd serve --shard` cuts it. */}}
{{- define "crowd.advertiseRoute" -}}
{{- $n := int (include "crowd.shards" .) -}}
{{- $parts := splitList "/" .Values.advertise -}}
{{- $o := splitList "." (first $parts) -}}
{{- if or (ne (len $parts) 2) (ne (len $o) 4) -}}
{{- fail (printf "advertise %q is no IPv4 CIDR (such as 10.251.0.0/16)" .Values.advertise) -}}
{{- end -}}
{{- $bits := 0 -}}
{{- $pow := 1 -}}
{{- range until 7 -}}
{{- if lt $pow $n -}}
{{- $pow = mul $pow 2 -}}
{{- $bits = add1 $bits -}}
{{- end -}}
{{- end -}}
{{- if ne $pow $n -}}
{{- fail (printf "with advertise, shards (%d) must be a power of two: the range is cut into equal CIDR slices" $n) -}}
{{- end -}}
{{- $plen := atoi (last $parts) -}}
{{- $slen := add $plen $bits -}}
{{- if gt $slen 32 -}}
{{- fail (printf "advertise %s is too small for %d shards" .Values.advertise $n) -}}
{{- end -}}
{{- $base := add (mul (atoi (index $o 0)) 16777216) (mul (atoi (index $o 1)) 65536) (mul (atoi (index $o 2)) 256) (atoi (index $o 3)) -}}
{{- $slice := 1 -}}
{{- range until (int (sub 32 $slen)) -}}
{{- $slice = mul $slice 2 -}}
{{- end -}}
a=$(({{ $base }} + JOB_COMPLETION_INDEX * {{ $slice }}))
ip route add local $((a >> 24 & 255)).$((a >> 16 & 255)).$((a >> 8 & 255)).$((a & 255))/{{ $slen }} dev lo
{{- end }}

{{/* crowd.adminTokenSecret names the Secret holding the admin API's token (key "token"). */}}
{{- define "crowd.adminTokenSecret" -}}
{{- .Values.adminToken.existingSecret | default (printf "%s-admin-token" .Release.Name) -}}
{{- end }}

{{/* crowd.adminTokenEnv is the env entry every container that talks to the admin API carries. */}}
{{- define "crowd.adminTokenEnv" -}}
- name: CROWD_ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "crowd.adminTokenSecret" . }}
      key: token
{{- end }}

{{/* crowd.image is the crowd's image reference. */}}
{{- define "crowd.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end }}

{{/* crowd.claim names the records volume's claim. */}}
{{- define "crowd.claim" -}}
{{- .Values.records.existingClaim | default .Release.Name -}}
{{- end }}
