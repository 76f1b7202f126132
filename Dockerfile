# mqblast image: a static binary on distroless (no shell). `make image` builds it.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=none
ARG DATE=unknown
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}" \
    -o /out/mqblast ./cmd/mqblast

# Root (not :nonroot): the tune init container writes sysctls; the run itself needs no root.
FROM gcr.io/distroless/static-debian12
COPY --from=build /out/mqblast /usr/local/bin/mqblast
ENTRYPOINT ["/usr/local/bin/mqblast"]
