# make test — the one test command: installs redis-server if missing, checks gofmt and
#             go vet, runs every test with the race detector (and the nested modules' tests:
#             bench/, examples/algorithms/, examples/gin/ (which serves Prometheus
#             metrics), examples/chi/ (route limits under the chi router), examples/rules/
#             (a Gin service whose limits all come from a reloaded rules.yaml),
#             examples/production/ (the recommended setup, against a real Redis), faults/,
#             which stops and slows real Redis servers under load, and
#             prommetrics/, the Prometheus collector, valkeyclient/, the backends on valkey-go;
#             internal/release builds the modules as a user gets them),
#             then the Redis-facing packages again on Valkey (valkey-server for redis-server).
# make bench — the benchmarks, ours and the peers' (bench/ is a module of its own);
# make bench-rls — rls/bench/: ratelimit-server beside envoyproxy/ratelimit.

GO ?= go

.PHONY: test bench bench-rls redis valkey

# The packages whose tests talk to Redis servers themselves, run on Valkey by make valkey, with
# the Cluster and Sentinel failovers of faults/.
VALKEY_PACKAGES = ./distributed/... ./concurrency/distributed/... ./internal/redistest/...

test: redis
	@.ci/check-tracked
	@files=$$(gofmt -l .); if [ -n "$$files" ]; then echo "gofmt -l reports:"; echo "$$files"; exit 1; fi
	$(GO) vet ./...
	cd bench && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd examples/algorithms && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd examples/gin && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	cd examples/chi && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	cd examples/rules && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	cd rules/rulesyaml && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	cd examples/production && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	cd faults && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	cd prommetrics && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	cd rls && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	cd rls/bench && $(GO) vet ./...
	cd valkeyclient && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	$(GO) test -race -count=1 ./...
	@$(MAKE) --no-print-directory valkey

# The Redis-facing packages on Valkey: the harness starts valkey-server (and its Cluster and
# Sentinel) where it would start redis-server. The redis target installs it; a machine
# without it fails here rather than skipping.
valkey: redis
	@command -v valkey-server >/dev/null 2>&1 || { echo "valkey-server is not in PATH and could not be installed (make redis): the Valkey step cannot run."; exit 1; }
	REDISTEST_SERVER=valkey-server $(GO) test -race -count=1 $(VALKEY_PACKAGES)
	cd faults && REDISTEST_SERVER=valkey-server $(GO) test -race -count=1 -run 'Failover' ./...
	cd valkeyclient && REDISTEST_SERVER=valkey-server $(GO) test -race -count=1 ./...

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
