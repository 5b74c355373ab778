# wake-on-chat. `make demo` runs the host against its built-in simulator;
# `make test` runs every test. `make demo` needs only Go. `make test` first
# installs or starts what the tests need when it is missing
# (scripts/test-setup.sh): a headless Chromium for the browser tests
# (scripts/install-chromium.sh: Debian's chromium-headless-shell through
# apt-get, only when no headless shell is found and root can install it,
# said in a line) and a PostgreSQL server that is installed
# but stopped (scripts/start-postgres.sh). The PostgreSQL store's suites run
# when a server answers at WAKE_TEST_POSTGRES_DSN (default
# postgres://postgres@127.0.0.1:5432/test), and are skipped, said in a line
# before and after the tests, when none does (WAKE_TEST_POSTGRES=required
# fails instead).
GO      ?= go
BIN     := bin
CMDS    := $(wildcard ./host/cmd/wakehost ./plugins/*/cmd/wake-plugin-*)

.PHONY: build test generate bench fuzz demo screenshot clean

build:
	$(GO) build -o $(BIN)/ $(CMDS)

test:
	@bash scripts/test-setup.sh
	@unformatted="$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	@$(GO) run ./host/internal/pgtest/probe
	$(GO) test -race ./...
	@$(GO) run ./host/internal/pgtest/probe

# Regenerates docs/state-diagram.md and the plugin API's gRPC code (the latter
# needs protoc: see plugins/pluginapi/gen.sh).
generate:
	$(GO) generate ./...

# A whole wake compressed to about 20 seconds: the host, its real plugins and
# the built-in simulator of a conductor and a model, on loopback.
DEMO_LISTEN ?= 127.0.0.1:8080
demo: build
	@echo "Status page: http://$(DEMO_LISTEN)/ (open it in a browser; it follows the wake live)"
	@echo "wake-on-chat demo on http://$(DEMO_LISTEN) (a 9-minute wake takes about 20 s; Ctrl-C stops it)."
	@echo "In another terminal, ask, then ask again every few seconds:"
	@echo "  curl -s -H 'Content-Type: application/json' -d '{\"message\":\"hello\",\"sessionId\":\"demo\"}' http://$(DEMO_LISTEN)/api/chat"
	@echo "  curl -s http://$(DEMO_LISTEN)/api/pods/qwen"
	@echo "  curl -s -H 'Content-Type: application/json' -d '{\"message\":\"hello\",\"sessionId\":\"fg\",\"wakeMode\":\"wait\"}' http://$(DEMO_LISTEN)/api/chat"
	@echo "  curl -sN http://$(DEMO_LISTEN)/api/pods/qwen/events"
	@echo
	./$(BIN)/wakehost -simulate -config wake.toml -listen $(DEMO_LISTEN)

# Regenerates docs/status-page.png, the README's screenshot of the status
# page: the browser test (headless Chromium, installed like make test does
# when missing) drives the page through two simulated wakes and copies its
# shot of the second one, loading, there.
screenshot:
	@bash scripts/test-setup.sh
	WAKE_STATUS_SCREENSHOT=$(CURDIR)/docs/status-page.png $(GO) test -count=1 -run '^TestStatusPageInBrowser$$' ./host/app/

# The benchmark harness (host/cmd/wakebench): builds the binaries, runs the
# simulator in-process and the real host as a child, and prints one Markdown
# table (medians of 5 runs), then measurement 7's simulated days and
# measurement 8's PostgreSQL rows, after the micro-benchmarks: about 6
# minutes in all. BENCH_FLAGS=-quick for a smoke test, BENCH_FLAGS='-only 7'
# (or 1-6, 2, 8) for one part, BENCH_FLAGS='-out bench.md' to keep it.
BENCH_FLAGS ?=
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./machines/ ./engine/
	$(GO) test -run '^$$' -bench GetPod -benchmem ./host/supervisor/
	$(GO) test -run '^$$' -bench Prepare -benchmem ./host/openai/
	$(GO) run ./host/cmd/wakebench $(BENCH_FLAGS)

# Each fuzz target for FUZZTIME; their seed corpora also run in make test.
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME) ./host/chat/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./host/config/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodePod$$' -fuzztime $(FUZZTIME) ./plugins/conductor/
	$(GO) test -run '^$$' -fuzz '^FuzzParseRequest$$' -fuzztime $(FUZZTIME) ./host/openai/

clean:
	rm -rf $(BIN)
