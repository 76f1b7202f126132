# mqblast image: the static binary of `make build` on an empty base, so that building it
# pulls nothing from a registry. Build it with `make image`, which stages this context
# (bin/image): the binary, the build host's CA bundle, passwd and group files that name
# the non-root user 65532, and an empty /tmp (worker processes write their scenario there).
FROM scratch
COPY rootfs/ /
# Not root: the run needs no privilege. The Kubernetes init container that writes sysctls
# (tune apply) runs as root through its securityContext (deploy/kubernetes/job.yaml).
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/mqblast"]
