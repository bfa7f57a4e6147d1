# The server's image: the binary, built here with a full Rust toolchain, on a small Debian, as
# a non-root user. `docker compose up --build` (or `docker build .`) builds it.
#
# The base images can be swapped for local ones (no registry at hand), as e2e/compose.rs does:
#   --build-arg RUNTIME_IMAGE=<a Debian bookworm>  --build-arg RUST_IMAGE=<a Rust on bookworm>
ARG RUST_IMAGE=rust:1-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

# Everything but the binary. It comes first so that `--target runtime` builds it alone, even
# with the classic builder (which builds every stage before its target): tools/docker/
# prebuilt.Dockerfile puts an already-built binary on it, the way the last stage does.
FROM ${RUNTIME_IMAGE} AS runtime
# curl is the compose health check's client.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /var/lib/apiserver --create-home apiserver
USER apiserver
WORKDIR /var/lib/apiserver
EXPOSE 6443
# Listen on every interface inside the container, over HTTPS only (plain HTTP is for loopback);
# the data dir, with the generated CA, is a volume.
ENTRYPOINT ["/usr/local/bin/apiserver", "--bind-address=0.0.0.0", "--port=0", "--data-dir=/var/lib/apiserver/data"]

FROM ${RUST_IMAGE} AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p apiserver \
    && cp target/release/apiserver /apiserver

FROM runtime
COPY --from=build /apiserver /usr/local/bin/apiserver
