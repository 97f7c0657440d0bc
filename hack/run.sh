#!/usr/bin/env bash
# Starts the apiserver on an embedded etcd and the controller-manager beside
# it, and prints how to reach them with kubectl. Used by `make run`; stops
# everything on Ctrl-C.
set -euo pipefail
DATA_DIR=${DATA_DIR:-.cronplane}
PORT=${PORT:-6443}
CM_PORT=${CM_PORT:-10257}
BIN=${BIN:-bin}
mkdir -p "$DATA_DIR"
dir="$(cd "$DATA_DIR" && pwd)"
kubeconfig="$dir/admin.kubeconfig"
rm -f "$kubeconfig" "$dir/controller-manager.kubeconfig"

"$BIN/apiserver" --data-dir "$DATA_DIR" --secure-port "$PORT" &
apiserver=$!
pids=$apiserver
trap 'kill $pids 2>/dev/null; wait $pids 2>/dev/null' EXIT INT TERM

for _ in $(seq 1 300); do
  if [ -s "$kubeconfig" ] && kubectl --kubeconfig "$kubeconfig" get --raw /readyz >/dev/null 2>&1; then
    break
  fi
  kill -0 $apiserver 2>/dev/null || { echo "apiserver exited" >&2; exit 1; }
  sleep 0.2
done

"$BIN/controller-manager" --kubeconfig "$dir/controller-manager.kubeconfig" --use-service-account-credentials --secure-port "$CM_PORT" &
pids="$pids $!"

cat <<MSG

cronplane is running (apiserver and controller-manager). In another terminal:

  export KUBECONFIG=$kubeconfig
  kubectl create cronjob hello --image=busybox --schedule='*/1 * * * *' -- echo hi
  kubectl get cronjobs,jobs

Press Ctrl-C to stop.
MSG
wait $apiserver
