# agnhost, the upstream e2e specs' test image, for running those specs on
# the compose cluster without a registry: the binary `make agnhost-image`
# builds from the reference's Kubernetes module, on the busybox image for
# the shell some specs run. Entry point and default command as upstream.
FROM busybox
COPY agnhost /agnhost
ENTRYPOINT ["/agnhost"]
CMD ["pause"]
