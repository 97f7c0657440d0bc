#!/usr/bin/env bash
# Starts the apiserver on an embedded etcd and prints how to reach it with
# kubectl. Used by `make run`; stops everything on Ctrl-C.
set -euo pipefail
DATA_DIR=${DATA_DIR:-.cronplane}
PORT=${PORT:-6443}
BIN=${BIN:-bin}
mkdir -p "$DATA_DIR"
kubeconfig="$(cd "$DATA_DIR" && pwd)/admin.kubeconfig"
rm -f "$kubeconfig"

"$BIN/apiserver" --data-dir "$DATA_DIR" --secure-port "$PORT" &
apiserver=$!
trap 'kill $apiserver 2>/dev/null; wait $apiserver 2>/dev/null' EXIT INT TERM

for _ in $(seq 1 300); do
  if [ -s "$kubeconfig" ] && kubectl --kubeconfig "$kubeconfig" get --raw /readyz >/dev/null 2>&1; then
    break
  fi
  kill -0 $apiserver 2>/dev/null || { echo "apiserver exited" >&2; exit 1; }
  sleep 0.2
done

cat <<MSG

cronplane is running. In another terminal:

  export KUBECONFIG=$kubeconfig
  kubectl create cronjob hello --image=busybox --schedule='*/5 * * * *' -- echo hi
  kubectl get cronjobs

Press Ctrl-C to stop.
MSG
wait $apiserver
