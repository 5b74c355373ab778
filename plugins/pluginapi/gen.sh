#!/usr/bin/env bash
# Regenerates the Go code for proto/wakeplugin.proto.
#
# Run through `go generate ./plugins/pluginapi/`. It installs the pinned
# code generators into <repo>/.tools/bin (nothing global), checks that
# protoc is there, and rewrites proto/*.pb.go. The output is committed; a
# run with the same protoc must reproduce it byte for byte.
set -euo pipefail

# Pinned generator versions. protoc-gen-go must match the
# google.golang.org/protobuf version in go.mod.
PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2
# The protoc the committed files were generated with (Debian's
# protobuf-compiler). Another version still works, but it changes the
# version comment at the top of the generated files.
EXPECTED_PROTOC="libprotoc 3.21.12"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="$repo/.tools/bin"

if ! command -v protoc >/dev/null 2>&1; then
	echo "gen.sh: protoc not found: install protobuf-compiler (Debian: apt-get install -y protobuf-compiler)" >&2
	exit 1
fi
if [ "$(protoc --version)" != "$EXPECTED_PROTOC" ]; then
	echo "gen.sh: warning: $(protoc --version) is not $EXPECTED_PROTOC; the generated headers will differ" >&2
fi

mkdir -p "$bin"
GOBIN="$bin" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
GOBIN="$bin" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"

cd "$here/proto"
PATH="$bin:$PATH" protoc \
	--proto_path=. \
	--go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative \
	wakeplugin.proto
