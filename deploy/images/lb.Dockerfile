# cronplane/lb: Debian's haproxy (installed on the build host with
# `apt-get install haproxy`), copied by `make images` with the shared
# libraries ldd names, at the same paths, on nothing else (no registry is
# needed: there is no base image). Its configuration is
# deploy/lb/haproxy.cfg, mounted by docker-compose.yaml. It runs as an
# unprivileged user: it binds 6443 and needs no capability.
FROM scratch
COPY haproxy/ /
USER 65532:65532
ENTRYPOINT ["/usr/sbin/haproxy", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]
