# wake-on-chat. `make demo` runs the host against its built-in simulator;
# `make test` runs every test. Only Go is needed for either.
GO      ?= go
BIN     := bin
CMDS    := $(wildcard ./host/cmd/wakehost ./plugins/conductor/cmd/wake-plugin-conductor ./plugins/provider-openai/cmd/wake-plugin-provider-openai)

.PHONY: build test generate bench fuzz demo clean

build:
	$(GO) build -o $(BIN)/ $(CMDS)

test:
	@unformatted="$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -race ./...

# Regenerates docs/state-diagram.md and the plugin API's gRPC code (the latter
# needs protoc: see plugins/pluginapi/gen.sh).
generate:
	$(GO) generate ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./machines/ ./engine/

clean:
	rm -rf $(BIN)
