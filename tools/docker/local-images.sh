#!/usr/bin/env bash
# Builds the images compose.yaml runs without any image registry, from Debian's packages and a
# server binary built on this machine (a Debian bookworm, or a glibc no newer than bookworm's):
#
#   <prefix>/debian:bookworm  debootstrap --variant=minbase bookworm, imported (kept: built only
#                             when missing; needs root and debootstrap)
#   <prefix>/etcd:bookworm    Debian's etcd-server and etcd-client on it (etcd.Dockerfile)
#   <prefix>/runtime          the repository Dockerfile's `runtime` stage on it
#   $APISERVER_IMAGE          BINARY on that stage (prebuilt.Dockerfile)
#
# Usage: tools/docker/local-images.sh BINARY
# Environment: LOCAL_IMAGE_PREFIX (default apiserver-rs-local), APISERVER_IMAGE (default
# <prefix>/apiserver), DEBIAN_MIRROR (default http://deb.debian.org/debian).
# Prints ETCD_IMAGE=... and APISERVER_IMAGE=..., the variables compose.yaml takes them from:
#   env $(tools/docker/local-images.sh target/release/apiserver) docker compose up -d --no-build
set -euo pipefail

binary=${1:?usage: $0 BINARY}
[ -x "$binary" ] || { echo "$binary: not an executable" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
prefix=${LOCAL_IMAGE_PREFIX:-apiserver-rs-local}
base="$prefix/debian:bookworm"
etcd="$prefix/etcd:bookworm"
runtime="$prefix/runtime"
apiserver=${APISERVER_IMAGE:-$prefix/apiserver}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Build output goes to stderr: stdout is the variables.
exec 3>&1 1>&2

if ! docker image inspect "$base" >/dev/null 2>&1; then
  echo "building $base (debootstrap, from $mirror)"
  debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log"; exit 1; }
  # What an image needs no copy of: downloaded packages and package lists (every image that
  # installs runs apt-get update first).
  rm -rf "$work/rootfs/var/cache/apt/"* "$work/rootfs/var/lib/apt/lists/"*
  tar -C "$work/rootfs" -c . | docker import - "$base" >/dev/null
  rm -rf "$work/rootfs"
fi

echo "building $etcd"
docker build -q -t "$etcd" --build-arg BASE_IMAGE="$base" -f "$here/etcd.Dockerfile" "$here" >/dev/null

# The runtime stage needs nothing from the build context: an empty one spares sending the
# sources.
echo "building $runtime"
mkdir "$work/empty"
docker build -q -t "$runtime" --target runtime --build-arg RUNTIME_IMAGE="$base" \
  -f "$repo/Dockerfile" "$work/empty" >/dev/null

# The binary alone is the context; debug info, most of a debug build's size, stays behind.
echo "building $apiserver from $binary"
mkdir "$work/bin"
if command -v strip >/dev/null 2>&1; then
  strip --strip-debug -o "$work/bin/apiserver" "$binary"
else
  cp "$binary" "$work/bin/apiserver"
fi
docker build -q -t "$apiserver" --build-arg RUNTIME_IMAGE="$runtime" \
  -f "$here/prebuilt.Dockerfile" "$work/bin" >/dev/null

echo "ETCD_IMAGE=$etcd" >&3
echo "APISERVER_IMAGE=$apiserver" >&3
