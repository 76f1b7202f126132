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
TEST_P   ?= 2
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

## test: every tier (what CI runs; needs mosquitto on PATH and gcc): each test once, under the race detector where its build can judge it; packages in parallel, the timing tests alone
# The tiers (internal/tier): unit tests are pure; integration tests start Mosquitto, a broker,
# a sink, Chromium, a network namespace or the binary, and -short skips them; timing tests
# assert on the scheduler (schedule lag, CPU figures, latency bounds), which two packages'
# tests sharing two cores would break now and then, so they run after, one at a time. The
# passes: the unit and integration tiers under the race detector (test-race); the tests it
# skipped and wrote down because its build cannot judge them (they drive the mqblast
# binary, not a race build), without it (scripts/plain-tests.sh); the unit tier without it
# (test-unit: the zero-allocation guards, which the race build leaves out); the timing
# tier alone (test-timing). Every result document a test's run writes is checked against the
# accounting identities as it is written (report.Audit); the last step fails when one broke
# an identity (scripts/result-audit.sh). Each pass runs also when one before failed, so that one run
# reports every tier.
# Each pass's line gives the time it starts (where the time goes: docs/performance.md).
test:
	@list=$$(mktemp); audit=$$(mktemp); export MQBLAST_RESULT_AUDIT=$$audit; s=0; pass() { printf -- '--- make test: %s (%s)\n' "$$1" "$$(date -u +%T)"; }; \
	  pass "the unit and integration tiers under the race detector"; MQBLAST_PLAIN_LIST=$$list $(MAKE) --no-print-directory test-race || s=1; \
	  pass "the tests it left (they drive the binary), without it"; scripts/plain-tests.sh $$list $(GO) test -p $(TEST_P) -count=1 || s=1; \
	  pass "the unit tier without it"; $(MAKE) --no-print-directory test-unit || s=1; \
	  pass "the timing tier, alone"; $(MAKE) --no-print-directory test-timing || s=1; \
	  pass "the result documents the tests wrote, against the accounting identities"; scripts/result-audit.sh $$audit || s=1; \
	  pass "done"; rm -f $$list $$audit; exit $$s

## test-race: the unit and integration tiers under the race detector, packages in parallel (the timing tests and those that drive the binary skip)
test-race:
	MQBLAST_TIMING=skip $(GO) test -race -p $(TEST_P) -count=1 ./...

## test-unit: the unit tier alone (-short), packages in parallel, in seconds and with nothing to install
test-unit:
	$(GO) test -short -p $(TEST_P) -count=1 ./...

## test-integration: the unit and integration tiers without the race detector, packages in parallel (the timing tests skip)
test-integration:
	MQBLAST_TIMING=skip $(GO) test -p $(TEST_P) -count=1 ./...

## test-timing: the timing tier alone, one package at a time (scripts/timing-tests.sh lists it)
test-timing:
	scripts/timing-tests.sh $(GO) test -p 1 -count=1

## race: every tier under the race detector, packages in parallel (timing tests log what they would fail on)
race:
	$(GO) test -race -p $(TEST_P) -count=1 ./...

## allocs: run the zero-allocation guards (they are skipped under -race)
allocs:
	$(GO) test -count=1 -run 'Allocs' ./...

## fuzz: short smoke of every fuzz target (FUZZTIME=20s each, or a count such as 300000x)
# The targets are found in the source (func FuzzX in a _test.go file), not by building every
# package's tests to list them.
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
	  for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
	    echo "fuzz $$(dirname $$f) $$t ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$(dirname $$f); \
	  done; \
	done

## bench: run every benchmark (-count=6) into $(BENCHOUT) for benchstat
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./... | tee $(BENCHOUT)

## bench-conn: 100,000 connections against 6 local Mosquittos, --procs auto, 3 runs (not CI)
bench-conn: build
	scripts/bench-conn.sh 100000 3

## bench-tls: RSS per idle connection and CPU per set-up over tcp, mqtts, ws, wss (TLS on the loop's record layer and on tls.Conn; 10,000 connections, 3 runs), and client CPU per message per transport (not CI)
bench-tls: build
	scripts/bench-tls.sh 10000 3
	scripts/bench-transport.sh 6

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

## bench-tls-sink: 300,000 mqtts connections held against mqblast sink --tls-cert --procs auto: client and sink RSS and CPU per connection, time to all connected, handshake rate (N, RATE, HOLD, RUNS, SCHEME=wss:// for WebSocket over TLS; not CI)
bench-tls-sink: build
	scripts/bench-tls-sink.sh

## fleet-1m: a million clients of a mixed workload (idle fleet with a storm on mqblast sink, talkers, backend and commands on Mosquitto) beside a Connections-only million (N, TALKERS, DURATION, STORM_AT, HOLD, ROUNDS, RATE, TUNE; not CI)
fleet-1m: build
	scripts/fleet-1m.sh

## bench-conn-curve: the cost per connection as the count grows, bench-1m's run at each of SIZES beside the keepalive floor, into results/conn-curve.json (RUNS, HOLD, KEEPALIVE, RATE; not CI)
bench-conn-curve: build
	GO=$(GO) scripts/bench-conn-curve.sh

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
# With build's flags, so that make cross build compiles the amd64 packages once.
cross:
	GOOS=linux GOARCH=amd64 CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o /dev/null ./cmd/mqblast
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o /dev/null ./cmd/mqblast

## clean: remove build output
clean:
	rm -rf bin $(BENCHOUT)


## limit-check: mqblast limit against a local Mosquitto RUNS times (3), then fixed-rate runs 5 % apart around the found limit: do they agree within 10 %? PIN=1 pins broker and client to CPUs of their own, QUIET=2 waits for a quiet host; SCENARIO SLO START STEP SWEEP (not CI)
limit-check: build
	scripts/limit-check.sh

## study-demo: the built-in study campaigns against Mosquitto, the embedded broker and the sink, into study-demo/ (minutes; network profiles need root)
STUDIES ?= retain-throughput edge-profiles-payloads
study-demo: build
	@mkdir -p study-demo
	@set -e; for c in $(STUDIES); do ./bin/mqblast study $$c --out study-demo/$$c; done
	@echo "open study-demo/*/study.html"
## study-brokers: the brokers-edge campaign (Mosquitto, embedded, RabbitMQ, aedes, gmqtt x local/optimal/worst x 1 KB/10 KB, QoS 1, 5 repetitions; not CI, about 21 min here, root, scripts/install-brokers.sh first) into study-brokers/
study-brokers: build
	@mkdir -p study-brokers
	./bin/mqblast study brokers-edge --out study-brokers/brokers-edge
	@echo "open study-brokers/brokers-edge/study.html"
.PHONY: help demo image build bench-conn bench-conn-curve bench-tls bench-msg bench-floor bench-1m bench-tls-sink fleet-1m bench-fanout limit-check study-demo study-brokers test test-race test-unit test-integration test-timing race allocs fuzz bench lint check cross clean
