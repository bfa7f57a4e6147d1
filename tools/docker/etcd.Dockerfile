# etcd from Debian's packages (etcd-server; etcd-client for the health check's etcdctl) on a
# local Debian image: compose.yaml's etcd where quay.io cannot be reached (ETCD_IMAGE). Built by
# local-images.sh.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
# policy-rc.d keeps the package's maintainer scripts from starting etcd during the build.
RUN printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d \
    && chmod +x /usr/sbin/policy-rc.d \
    && apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        etcd-server etcd-client \
    && rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d
