# make test — the one test command: installs redis-server if missing, checks gofmt and
#             go vet, runs every test with the race detector (and the nested modules' tests:
#             bench/, examples/algorithms/, examples/gin/ (which serves Prometheus
#             metrics), examples/chi/ (route limits under the chi router), examples/rules/
#             (a Gin service whose limits all come from a reloaded rules.yaml),
#             examples/production/ (the recommended setup, against a real Redis), faults/,
#             which stops and slows real Redis servers under load, and
#             prommetrics/, the Prometheus collector; internal/release builds the modules as a user gets them).
# make bench — the benchmarks, ours and the peers' (bench/ is a module of its own).

GO ?= go

.PHONY: test bench redis

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
	$(GO) test -race -count=1 ./...

# Our own benchmarks, then the comparison with other limiters (figures: docs/performance.md).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
	cd bench && $(GO) test -run '^$$' -bench . -benchmem -count 1

# The tests start their own redis-server processes (a single node and a 3-node cluster on
# loopback ports they pick); they only need the binaries.
redis:
	@if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then \
		exit 0; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing redis-server with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	else \
		echo "redis-server and redis-cli are needed by the tests and are not in PATH."; \
		echo "Install them, e.g. 'sudo apt-get install redis-server' or 'brew install redis', then run make test again."; \
		exit 1; \
	fi
