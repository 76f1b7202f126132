# mqblast — see README.md. `make help` lists the targets.
GO       ?= go
PKG      := github.com/mqblast/mqblast
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo none)
DATE     ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS  := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
GOLANGCI := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
GOIMPORTS:= golang.org/x/tools/cmd/goimports@v0.52.0
FUZZTIME ?= 20s
BENCHOUT ?= bench.txt
IMAGE    ?= mqblast:$(VERSION)
# docker when its engine answers, else podman when installed (it needs no daemon).
IMAGE_TOOL ?= $(shell docker info >/dev/null 2>&1 && echo docker || { command -v podman >/dev/null 2>&1 && echo podman; } || echo docker)
IMAGE_CONTEXT ?= bin/image
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt

.DEFAULT_GOAL := help

## help: list the targets
help:
	@grep -E '^## ' $(MAKEFILE_LIST) | sed -e 's/^## /  /' | column -t -s ':'

## build: build bin/mqblast with version, commit and date
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/mqblast ./cmd/mqblast

## demo: build mqblast and run a first benchmark on the embedded broker (no broker to install), 10 s of Point-To-Point messages with their throughput and latency percentiles; ends with the path of its HTML report
# quick-p2p-100: 100 publisher/subscriber pairs at 10 msg/s each (1,000 msg/s), QoS 1.
demo: build
	@mkdir -p results
	./bin/mqblast run quick-p2p-100 --out results/demo.json --html results/demo.html

## test: run the test suite (what CI runs; needs mosquitto on PATH for the engine tests)
# One package at a time (-p 1): the engine tests hold a client to its schedule (lag p99
# under 10 ms) and a broker to its keepalive, which two packages' tests on two cores broke
# now and then (TestBrokerKilledAndRestarted saw 13.8 ms of lag in CI). About 6 minutes here.
test:
	$(GO) test -p 1 -count=1 ./...

## race: run the test suite under the race detector
race:
	$(GO) test -race -p 1 -count=1 ./...

## allocs: run the zero-allocation guards (they are skipped under -race)
allocs:
	$(GO) test -count=1 -run 'Allocs' ./...

## fuzz: short smoke of every fuzz target (FUZZTIME=20s each, or a count such as 300000x)
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$t ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

## bench: run every benchmark (-count=6) into $(BENCHOUT) for benchstat
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./... | tee $(BENCHOUT)

## bench-conn: 100,000 connections against 6 local Mosquittos, --procs auto, 3 runs (not CI)
bench-conn: build
	scripts/bench-conn.sh 100000 3

## bench-tls: RSS per idle connection and CPU per set-up over tcp, mqtts, ws, wss (10,000 connections, 3 runs), and client CPU per message per transport (not CI)
bench-tls: build
	scripts/bench-tls.sh 10000 3
	$(GO) test -run '^$$' -bench 'Transport' -benchtime 1000000x -count 6 ./reactor | tee bench-tls.txt

## bench-msg: client CPU per received and per published message against mqblast sink in a child process (-count 6)
bench-msg:
	$(GO) test -run '^$$' -bench 'Client(Receive|Publish)' -benchtime 2000000x -count 6 ./bench | tee bench-msg.txt

## bench-net: network profiles through the packet emulator: round-trip shift per profile, 1 % loss as TCP retransmissions, emulator CPU per frame (root, mosquitto)
.PHONY: bench-net
bench-net:
	MQBLAST_BENCH_NET=1 $(GO) test -count=1 -v -run '^TestBenchNet$$' ./tuning/netemu | tee bench-net.txt

## bench-floor: mqblast run against the raw-socket floor bin/floor (CPU per message, syscalls), Mosquitto, QoS 0/1, 3 runs (not CI)
bench-floor: build
	GO=$(GO) scripts/bench-floor.sh 3

## bench-1m: a million connections against mqblast sink --procs auto (N, RUNS, HOLD, RATE, TUNE; not CI)
bench-1m: build
	scripts/bench-1m.sh

## bench-fanout: fanout-20-1000-20-2M against mqblast sink and Mosquitto (RUNS, MEASURE, RATE, SUBS, SINK_FLUSH; not CI)
bench-fanout: build
	scripts/bench-fanout.sh

## lint: goimports check, go vet and golangci-lint (pinned through the Go module proxy)
lint:
	@out=$$($(GO) run $(GOIMPORTS) -l $$(git ls-files '*.go')); \
	  if [ -n "$$out" ]; then echo "goimports would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(GOLANGCI) run ./...

## check: lint + race + fuzz smoke
check: lint race fuzz

## image: build the container image $(IMAGE) with $(IMAGE_TOOL) from bin/mqblast on scratch, pulling nothing (deploy/kubernetes)
# The context $(IMAGE_CONTEXT)/rootfs is the image's whole file system: the binary, this
# host's CA bundle ($(CA_BUNDLE), for mqtts and wss), the user 65532 and a /tmp.
image: build
	@test -r $(CA_BUNDLE) || { echo "no CA bundle at $(CA_BUNDLE) (set CA_BUNDLE)"; exit 1; }
	mkdir -p $(IMAGE_CONTEXT)/rootfs/usr/local/bin $(IMAGE_CONTEXT)/rootfs/etc/ssl/certs $(IMAGE_CONTEXT)/rootfs/tmp
	chmod 1777 $(IMAGE_CONTEXT)/rootfs/tmp
	cp bin/mqblast $(IMAGE_CONTEXT)/rootfs/usr/local/bin/mqblast
	cp $(CA_BUNDLE) $(IMAGE_CONTEXT)/rootfs/etc/ssl/certs/ca-certificates.crt
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n' >$(IMAGE_CONTEXT)/rootfs/etc/passwd
	printf 'root:x:0:\nnonroot:x:65532:\n' >$(IMAGE_CONTEXT)/rootfs/etc/group
	$(IMAGE_TOOL) build -t $(IMAGE) -f Dockerfile $(IMAGE_CONTEXT)

## cross: build for linux/amd64 and linux/arm64
cross:
	GOOS=linux GOARCH=amd64 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/mqblast
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/mqblast

## clean: remove build output
clean:
	rm -rf bin $(BENCHOUT)


## study-demo: the built-in study campaigns against Mosquitto, the embedded broker and the sink, into study-demo/ (minutes; network profiles need root)
STUDIES ?= retain-throughput edge-profiles-payloads
study-demo: build
	@mkdir -p study-demo
	@set -e; for c in $(STUDIES); do ./bin/mqblast study $$c --out study-demo/$$c; done
	@echo "open study-demo/*/study.html"
.PHONY: help demo image build bench-conn bench-tls bench-msg bench-floor bench-1m bench-fanout study-demo test race allocs fuzz bench lint check cross clean
