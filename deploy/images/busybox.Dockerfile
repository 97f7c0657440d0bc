# busybox for the pods of the compose cluster: Debian's busybox-static
# (which `make images` downloads and unpacks into the build context) on
# nothing else, with its applets linked into /bin. Tagged busybox and as
# the upstream e2e image, so that both run without a registry.
FROM scratch
COPY bin/busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CMD ["sh"]
