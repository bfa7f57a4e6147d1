# Build: a full Rust toolchain; run: a small Debian with only the binary, as a non-root user.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p apiserver \
    && cp target/release/apiserver /apiserver

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /var/lib/apiserver --create-home apiserver
COPY --from=build /apiserver /usr/local/bin/apiserver
USER apiserver
WORKDIR /var/lib/apiserver
EXPOSE 6443
# Listen on every interface inside the container, over HTTPS only (plain HTTP is for loopback);
# the data dir, with the generated CA, is a volume.
ENTRYPOINT ["/usr/local/bin/apiserver", "--bind-address=0.0.0.0", "--port=0", "--data-dir=/var/lib/apiserver/data"]
