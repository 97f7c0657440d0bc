#!/usr/bin/env bash
# Rolls a configuration change (deploy/runtime-config.env) through the
# compose cluster one component at a time, so that the API stays up:
# apiserver-0, then apiserver-1 once apiserver-0 is ready again, then
# each controller-manager. `up --no-deps --force-recreate` re-reads the
# configuration, which a plain restart would not.
set -euo pipefail
: "${COMPOSE:?COMPOSE is the compose command with its project and env file}"
deadline_of() { echo $((SECONDS + ${WAIT_SECONDS:-120})); }
for i in 0 1; do
  echo "restarting apiserver-$i"
  $COMPOSE up -d --no-deps --force-recreate "apiserver-$i"
  deadline=$(deadline_of)
  until kubectl --context "apiserver-$i" get --raw /readyz >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "apiserver-$i is not ready again" >&2; exit 1; }
    sleep 1
  done
  echo "apiserver-$i ready"
done
for i in 0 1; do
  echo "restarting controller-manager-$i"
  $COMPOSE up -d --no-deps --force-recreate "controller-manager-$i"
done
echo "rolled out"
