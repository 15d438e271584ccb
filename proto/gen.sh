#!/bin/bash
# gen.sh OUTDIR — generates Go code for every .proto under proto/ into
# OUTDIR (`make proto` passes proto/ itself).
# gen.sh -check — generates into a temporary directory and fails if the
# committed *.pb.go files differ from it (`make proto-check`, run by
# `make test`).
# Generator versions are pinned:
# protoc from Debian's protobuf-compiler (+ libprotobuf-dev for the
# well-known types) and protoc-gen-go / protoc-gen-go-grpc installed into
# bin/tools with `go install module@version`.
set -euo pipefail

PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2
PROTOC_VERSION="libprotoc 3.21.12"

out=${1:?usage: gen.sh OUTDIR | -check}
go=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)

if [ "$out" = -check ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	"$0" "$tmp"
	list() { (cd "$1" && find . -name '*.pb.go' | sed 's|^\./||' | sort); }
	stale=0
	diff -u <(list "$root/proto") <(list "$tmp") >&2 || stale=1
	for f in $(list "$tmp"); do
		if [ -f "$root/proto/$f" ] && ! cmp -s "$tmp/$f" "$root/proto/$f"; then
			echo "differs: proto/$f" >&2
			stale=1
		fi
	done
	if [ $stale -ne 0 ]; then
		echo "generated code under proto/ is stale: run \`make proto\` and commit the result" >&2
		exit 1
	fi
	echo "proto-check: generated code is up to date"
	exit 0
fi
tools=$root/bin/tools

if ! command -v protoc >/dev/null; then
	echo "gen.sh: protoc not found; apt-get install protobuf-compiler libprotobuf-dev" >&2
	exit 1
fi
if [ "$(protoc --version)" != "$PROTOC_VERSION" ]; then
	echo "gen.sh: want $PROTOC_VERSION, have $(protoc --version)" >&2
	exit 1
fi

# tool NAME MODULE VERSION: installs NAME at VERSION unless already there.
tool() {
	local stamp=$tools/.$1-$3
	if [ ! -x "$tools/$1" ] || [ ! -f "$stamp" ]; then
		mkdir -p "$tools"
		GOBIN=$tools $go install "$2@$3"
		rm -f "$tools/.$1-"*
		touch "$stamp"
	fi
}
tool protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go "$PROTOC_GEN_GO_VERSION"
tool protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION"

mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$root/proto"
mapfile -t files < <(find . -name '*.proto' | sed 's|^\./||' | sort)
PATH=$tools:$PATH protoc -I . -I /usr/include \
	--go_out="$out" --go_opt=paths=source_relative \
	--go-grpc_out="$out" --go-grpc_opt=paths=source_relative \
	"${files[@]}"
