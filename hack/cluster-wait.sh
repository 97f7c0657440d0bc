#!/usr/bin/env bash
# Waits, at most WAIT_SECONDS (120), until both apiservers of the compose
# cluster and the load balancer in front of them answer /readyz through
# the admin kubeconfig ($KUBECONFIG).
set -euo pipefail
deadline=$((SECONDS + ${WAIT_SECONDS:-120}))
for context in apiserver-0 apiserver-1 apiserver-lb; do
  until kubectl --context "$context" get --raw /readyz >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "$context is not ready after ${WAIT_SECONDS:-120}s" >&2
      $COMPOSE ps >&2 || true
      exit 1
    fi
    sleep 1
  done
  echo "$context ready"
done
cat <<MSG

cronplane cluster up on https://127.0.0.1:16443 (apiserver-lb, the current context);
apiserver-0 on https://127.0.0.1:16444, apiserver-1 on https://127.0.0.1:16445

  export KUBECONFIG=$KUBECONFIG
  kubectl get --raw /readyz?verbose
  kubectl --context apiserver-1 get namespaces
MSG
