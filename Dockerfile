# The crowd as a container image: one static binary, CA certificates, nothing else.
#
# The binary links OpenSSL's libcrypto statically (cgo, Debian's libssl-dev), so it signs with the
# libcrypto backend (`crowd version` says so; --crypto go picks Go's crypto/rsa): no shared object,
# no shell. `-linkmode external -extldflags -static` with the tags netgo,osusergo makes it static,
# and the tag crowd_static links libcrypto.a (a build without it names libcrypto.so.3);
# the linker's warnings about getaddrinfo and dlopen in libcrypto.a are harmless: the crowd never
# calls libcrypto's own name lookups or loads OpenSSL engines.
#
# Two ways to build it, to the same layout (the binary in /usr/local/bin, CA certificates, /state):
#
#   docker build -t crowd .                       # or podman build: compiles in a golang stage
#   podman build --build-arg VERSION=$(git describe --always --dirty) -t crowd .
#
#   # Without a registry (no golang image to pull): build the binary on the host (gcc and
#   # libssl-dev installed), then package it; the `local` target reads ./crowd and
#   # ./ca-certificates.crt from the context.
#   CGO_ENABLED=1 go build -trimpath -tags netgo,osusergo,crowd_static \
#     -ldflags "-s -w -linkmode external -extldflags -static -X main.version=$(git describe --always --dirty)" \
#     -o crowd ./cmd/crowd
#   # (or CGO_ENABLED=0 go build … for a crowd without libcrypto: the Go backend signs)
#   cp /etc/ssl/certs/ca-certificates.crt .
#   podman build --target local -t crowd .
#
# Run it with host networking, so the SUT reaches the origins on the standard ports and the
# crowd's DNS on :53 (see pasture/compose.yaml for the crowd next to a SUT):
#
#   podman run -d --name crowd --network host -v crowd-state:/state crowd \
#     serve --advertise 10.0.0.2 --dns-record sut.test=10.0.0.3
#
# The process runs as root inside the container: it binds 443, 80 and 53. The state (keys, the
# CA, the follow graph, the activity log) is the volume /state; keep it, or every SUT that has
# cached the crowd's keys must be wiped (DESIGN.md §3). The admin API stays on 127.0.0.1:9180,
# which with host networking is the host's loopback.

ARG GO_VERSION=1.26

# ---- build: the static binary, compiled from the context --------------------------------------
FROM golang:${GO_VERSION} AS build
# libcrypto.a and OpenSSL's headers for the libcrypto signing backend (gcc is in the image).
RUN apt-get update -q && apt-get install -y -q --no-install-recommends libssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Modules first, so an edit to the code does not download them again. Behind a proxy of your
# own, pass --build-arg GOPROXY=… (empty: the Go default).
ARG GOPROXY
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=1 go build -trimpath -tags netgo,osusergo,crowd_static \
      -ldflags "-s -w -linkmode external -extldflags -static -X main.version=${VERSION}" \
      -o /out/usr/local/bin/crowd ./cmd/crowd \
 && mkdir -p /out/etc/ssl/certs /out/state \
 && cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/

# ---- base: what every final image declares --------------------------------------------------------
FROM scratch AS base
ENV PATH=/usr/local/bin \
    CROWD_STATE=/state
# Relative paths (crowd flood's default out/load) land in /out: mount a host folder there.
WORKDIR /
VOLUME ["/state"]
# 80 HTTP, 443 HTTPS, 53 DNS, 9180 the admin API (bound to 127.0.0.1 unless --admin says otherwise).
EXPOSE 80 443 53/udp 53/tcp 9180
ENTRYPOINT ["crowd"]
CMD ["serve"]
ARG VERSION=dev
LABEL org.opencontainers.image.title="crowd" \
      org.opencontainers.image.description="A crowd of fake fediverse servers that floods and debugs an ActivityPub server" \
      org.opencontainers.image.version="${VERSION}"

# ---- local: package a binary built outside (no registry needed) ----------------------------------
FROM base AS local
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY crowd /usr/local/bin/crowd

# ---- release (the default target): the binary from the build stage -------------------------------
FROM base AS release
COPY --from=build /out/ /
