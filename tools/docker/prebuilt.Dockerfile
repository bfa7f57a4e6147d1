# The server's image from a binary built outside Docker: the repository Dockerfile's `runtime`
# stage (RUNTIME_IMAGE, built with `--target runtime`) with the binary put where its last stage
# puts the one it compiles. The build context is a directory holding only `apiserver`.
# Built by local-images.sh.
ARG RUNTIME_IMAGE
FROM ${RUNTIME_IMAGE}
COPY apiserver /usr/local/bin/apiserver
