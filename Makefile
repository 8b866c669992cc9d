# make test — the one test command: installs redis-server if missing, checks gofmt and
#             go vet, runs every test with the race detector (and the nested modules' tests:
#             bench/, examples/algorithms/, examples/gin/ (which serves Prometheus
#             metrics), examples/chi/ (route limits under the chi router), examples/rules/
#             (a Gin service whose limits all come from a reloaded rules.yaml),
#             examples/production/ (the recommended setup, against a real Redis), faults/,
#             which stops and slows real Redis servers under load, and
#             prommetrics/, the Prometheus collector, valkeyclient/, the backends on valkey-go;
#             internal/release builds the modules as a user gets them),
#             and the Redis-facing packages again on Valkey (valkey-server for redis-server);
#             the steps run side by side (JOBS=1 for one at a time).
# make bench — the benchmarks, ours and the peers' (bench/ is a module of its own);
# make bench-rls — rls/bench/: ratelimit-server beside envoyproxy/ratelimit.

GO ?= go

.PHONY: test bench bench-rls redis valkey

# The packages whose tests talk to Redis servers themselves, run on Valkey by make valkey, with
# the Cluster and Sentinel failovers of faults/.
VALKEY_PACKAGES = ./distributed/... ./concurrency/distributed/... ./internal/redistest/...

# The nested modules, each vetted and tested in its own folder (rls/bench only vetted; bench and
# examples/algorithms without the race detector).
MODULES = bench examples/algorithms examples/gin examples/chi examples/rules rules/rulesyaml \
	examples/production faults prommetrics rls rls/bench valkeyclient
NORACE = bench examples/algorithms
VETONLY = rls/bench

# The steps of make test run side by side, JOBS at a time (make -j; -O keeps each step's output
# together; -k runs the others when one fails, and make still fails). Many tests wait on Redis
# servers and loopback round trips rather than on the CPU: a test binary runs up to PARALLEL
# of its tests at once (those that call t.Parallel), go test up to PACKAGES binaries. go vet
# has checked every package, tests included, so go test does not run its subset again.
JOBS ?= 4
PARALLEL ?= 4
PACKAGES ?= 3
TESTFLAGS = -count=1 -vet=off -p $(PACKAGES) -parallel $(PARALLEL)

test: redis
	@.ci/check-tracked
	@files=$$(gofmt -l .); if [ -n "$$files" ]; then echo "gofmt -l reports:"; echo "$$files"; exit 1; fi
	@status=0; $(MAKE) --no-print-directory -k -j $(JOBS) -O test-steps || status=1; \
		$(MAKE) --no-print-directory -k -O faults-tests || status=1; exit $$status

# The root module's packages are compiled once, as go vet and the race detector need them,
# before the steps that share them (concurrent go commands would each compile them). faults/
# puts a load through real servers for real seconds and checks what it got: its tests run
# last, alone (faults-build compiles them beside the other steps).
STEPS = $(patsubst %,module-%,$(filter-out faults,$(MODULES)))
.PHONY: test-steps vet-root build-race test-root $(STEPS) faults-build faults-tests valkey-root \
	valkey-faults valkey-vk
test-steps: test-root valkey-root valkey-vk $(STEPS) faults-build

vet-root:
	$(GO) vet ./...

build-race:
	$(GO) build -race ./...

test-root: vet-root build-race
	$(GO) test -race $(TESTFLAGS) ./...

$(STEPS): module-%: vet-root build-race
	cd $* && $(GO) vet ./...
	$(if $(filter $*,$(VETONLY)),,cd $* && $(GO) test $(if $(filter $*,$(NORACE)),,-race) $(TESTFLAGS) ./...)

faults-build: vet-root build-race
	cd faults && $(GO) vet ./... && $(GO) test -race -count=1 -vet=off -run '^$$' ./...

faults-tests:
	cd faults && $(GO) test -race $(TESTFLAGS) ./...
	$(VALKEY)
	cd faults && REDISTEST_SERVER=valkey-server $(GO) test -race $(TESTFLAGS) -run 'Failover' ./...

# The Redis-facing packages on Valkey: the harness starts valkey-server (and its Cluster and
# Sentinel) where it would start redis-server. The redis target installs it; a machine
# without it fails here rather than skipping.
valkey: redis
	@status=0; $(MAKE) --no-print-directory -k -j $(JOBS) -O valkey-root valkey-vk || status=1; \
		$(MAKE) --no-print-directory valkey-faults || status=1; exit $$status

VALKEY = @command -v valkey-server >/dev/null 2>&1 || { echo "valkey-server is not in PATH and could not be installed (make redis): the Valkey step cannot run."; exit 1; }

valkey-root: build-race
	$(VALKEY)
	REDISTEST_SERVER=valkey-server $(GO) test -race $(TESTFLAGS) $(VALKEY_PACKAGES)

valkey-faults:
	$(VALKEY)
	cd faults && REDISTEST_SERVER=valkey-server $(GO) test -race $(TESTFLAGS) -run 'Failover' ./...

valkey-vk: build-race
	$(VALKEY)
	cd valkeyclient && REDISTEST_SERVER=valkey-server $(GO) test -race $(TESTFLAGS) ./...

# Our own benchmarks, then the comparison with other limiters (figures: docs/performance.md).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
	cd bench && $(GO) test -run '^$$' -bench . -benchmem -count 1

# ratelimit-server beside the reference service, built from the module proxy (minutes the
# first time); the load and Redis on CPU 0, the servers on CPU 1 (docs/performance.md).
bench-rls: redis
	cd rls/bench && taskset -c 0 $(GO) test -run '^$$' -bench . -benchtime 3s -count 1 -args -rounds 3

# The tests start their own redis-server processes (a single node and a 3-node cluster on
# loopback ports they pick), and valkey-server ones for make valkey; they only need the
# binaries. Valkey comes from Debian's bookworm-backports, whose source is added if missing.
redis:
	@if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then \
		:; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing redis-server with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	else \
		echo "redis-server and redis-cli are needed by the tests and are not in PATH."; \
		echo "Install them, e.g. 'sudo apt-get install redis-server' or 'brew install redis', then run make test again."; \
		exit 1; \
	fi
	@if command -v valkey-server >/dev/null 2>&1; then \
		:; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		release=; \
		if grep -qs 'VERSION_CODENAME=bookworm' /etc/os-release; then \
			release="-t bookworm-backports"; \
			grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d || \
				echo "deb http://deb.debian.org/debian bookworm-backports main" > /etc/apt/sources.list.d/bookworm-backports.list; \
		fi; \
		echo "installing valkey-server with apt-get $$release"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$release valkey-server >/dev/null; \
	else \
		echo "valkey-server is needed by make valkey and is not in PATH: install it (Debian bookworm-backports: valkey-server; brew install valkey), then run make test again."; \
		exit 1; \
	fi
