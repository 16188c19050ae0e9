#!/bin/bash
# Collect the reports that the gpudoctor DaemonSet (or Job) printed, one <node>.json per node,
# then compare the nodes.
#
#   deploy/kubernetes/collect.sh DIR [LABEL_SELECTOR]
#   deploy/kubernetes/collect.sh reports/                          # DaemonSet (daemonset.yaml)
#   deploy/kubernetes/collect.sh reports/ job-name=gpudoctor-check  # Job (job.yaml)
#
# Needs kubectl (with access to the gpudoctor namespace) and gpudoctor on this machine.
set -euo pipefail

dir=${1:?usage: collect.sh DIR [LABEL_SELECTOR]}
selector=${2:-app.kubernetes.io/name=gpudoctor}
namespace=${GPUDOCTOR_NAMESPACE:-gpudoctor}
mkdir -p "$dir"

# the DaemonSet prints from its init container; the Job from its only container
container=gpudoctor
kubectl -n "$namespace" get pods -l "$selector" \
    -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}' |
while read -r pod node; do
    [ -n "$pod" ] || continue
    if kubectl -n "$namespace" logs "$pod" -c "$container" > "$dir/$node.json" 2> "$dir/$node.err"; then
        rm -f "$dir/$node.err"
    else
        echo "collect.sh: no report from $pod on $node (see $dir/$node.err)" >&2
    fi
done

gpudoctor fleet "$dir"
