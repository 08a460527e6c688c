# syntax=docker/dockerfile:1
# mvpctl as a static binary on a distroless base, running as non-root.
#   docker build --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg COMMIT=$(git rev-parse --short HEAD) -t ghcr.io/mvpctl/mvpctl .

FROM golang:1.26.8 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X github.com/mvpctl/mvpctl/cmd/mvpctl/cli.version=${VERSION} -X github.com/mvpctl/mvpctl/cmd/mvpctl/cli.commit=${COMMIT}" \
      -o /out/mvpctl ./cmd/mvpctl

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/mvpctl /usr/local/bin/mvpctl
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/mvpctl"]
