#!/usr/bin/env bash
# consumer-test.sh WORKDIR - use the Go binding from a new module outside the repository, the
# documented way (docs/bindings.md, bindings/go/README.md): `go mod init`, a `replace` of
# github.com/skycmd/libskycmd/bindings/go by the checkout's bindings/go, `go build` with cgo
# against the installed libskycmd found by pkg-config. Then run the example request and write
# the dump. The contract (env, dump format) is in bindings/run-consumers.sh.
set -euo pipefail
work=$(realpath -m "$1")
mkdir -p "$work/consumer" "$work/gopath" "$work/gocache"
export GOPATH="$work/gopath" GOCACHE="$work/gocache" GOMODCACHE="$work/gopath/pkg/mod"
# Nothing to download: the binding has no dependencies, and the replace points at a directory.
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=${GOTOOLCHAIN:-local} CGO_ENABLED=1
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin:/usr/lib/go-1.22/bin
go version
cd "$work/consumer"
go mod init example.com/consumer
go mod edit -require=github.com/skycmd/libskycmd/bindings/go@v0.0.0 \
            -replace=github.com/skycmd/libskycmd/bindings/go="$SKYCMD_REPO/bindings/go"
cat > main.go <<'GO'
// A program of a downstream project: answer a request with the Go binding of libskycmd and
// print its typed answers in the cross-check's dump form.
package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/skycmd/libskycmd/bindings/go/skycmd"
)

func main() {
	model, requestPath, dumpPath := os.Args[1], os.Args[2], os.Args[3]
	request, err := os.ReadFile(requestPath)
	if err != nil {
		fail(err)
	}
	m, err := skycmd.Open(model)
	if err != nil {
		fail(err)
	}
	defer m.Close()
	r, err := m.Decide(context.Background(), string(request))
	if err != nil {
		fail(err)
	}
	var b strings.Builder
	bits := func(v float64) string { return fmt.Sprintf("%016x", math.Float64bits(v)) }
	fmt.Fprintf(&b, "input_tokens %d\n", r.InputTokens)
	for _, a := range r.Answers {
		conf := "none"
		if a.Confidence != nil {
			conf = bits(*a.Confidence)
		}
		fmt.Fprintf(&b, "answer %s %s choice=%s value=%s confidence=%s\n", a.ID, a.Type, a.Choice, bits(a.Value), conf)
		for _, p := range a.Probabilities {
			fmt.Fprintf(&b, "option %s %s\n", p.Key, bits(p.P))
		}
	}
	if err := os.WriteFile(dumpPath, []byte(b.String()), 0o644); err != nil {
		fail(err)
	}
	fmt.Printf("libskycmd %s, model %s: %d answers, %d input tokens\n", skycmd.Version(), r.Model, len(r.Answers), r.InputTokens)
	// The built-in model, found where the library is installed.
	p, err := skycmd.DefaultModelPath()
	if err != nil {
		fail(err)
	}
	d, err := skycmd.OpenDefault()
	if err != nil {
		fail(err)
	}
	fmt.Printf("built-in model %s: %s\n", d.Name(), p)
	d.Close()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "consumer:", err)
	os.Exit(1)
}
GO
go build -o consumer .
# A prefix install is not on the loader's path: say where it is, as its user would.
out=$(env -u SKYCMD_DEFAULT_MODEL LD_LIBRARY_PATH="$SKYCMD_PREFIX/lib" ./consumer "$SKYCMD_CONSUMER_MODEL" "$SKYCMD_CONSUMER_REQUEST" "$SKYCMD_CONSUMER_DUMP")
echo "$out"
# the built-in model of the prefix, found beside the installed library
grep -qxF "built-in model s1-pico-flappy: $(realpath "$SKYCMD_PREFIX")/share/skycmd/models/s1-pico-flappy.gguf" <<<"$out" ||
    { echo "the built-in model was not found in the prefix"; exit 1; }
