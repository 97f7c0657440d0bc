# cronplane/apiserver: the static binary that `make images` builds, on nothing
# else (no registry is needed: there is no base image), running as an
# unprivileged user whose data directory a named volume inherits.
FROM scratch
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --chown=65532:65532 empty/ /tmp/
COPY --chown=65532:65532 empty/ /var/lib/cronplane/
COPY apiserver /usr/local/bin/apiserver
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/apiserver"]
