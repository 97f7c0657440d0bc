# cronplane/node-agent: the static binary that `make images` builds, on
# nothing else. It runs as root: it talks to the engine through the
# engine's socket, bind-mounted, and writes the pods' volumes under its
# --root-dir, which the engine bind-mounts into the pods' containers.
FROM scratch
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY empty/ /tmp/
COPY node-agent /usr/local/bin/node-agent
ENTRYPOINT ["/usr/local/bin/node-agent"]
