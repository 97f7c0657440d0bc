# The pause image the upstream e2e specs run (registry.k8s.io/pause:3.9),
# for a cluster without a registry: the busybox image with a shell that
# waits until SIGTERM or SIGINT and exits 0 then, as the pause binary does.
FROM busybox
ENTRYPOINT ["sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 1; done"]
