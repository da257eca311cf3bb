#!/usr/bin/env bash
# consumer-test.sh WORKDIR - use the Go binding from a new module outside the repository, the
# documented way (docs/bindings.md, bindings/go/README.md): `go mod init`, a `replace` of
# github.com/skycmd/libskycmd/bindings/go by the checkout's bindings/go, `go build` with cgo
# against the installed libskycmd found by pkg-config. Then open the model with OpenContext,
# run the example request and write the dump, run a streaming batch (DecideEach) with a bad
# request in it, and open the built-in model. The contract (env, dump format) is in
# bindings/run-consumers.sh.
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
	// The context-aware open (a long load gives up when ctx ends).
	m, err := skycmd.OpenContext(context.Background(), model)
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
	streamingBatch(m, string(request), r)
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
# The iterator forms need Go 1.23 (range over func); with Go 1.22 the rest of the binding
# builds, and the consumer says so instead.
cat > each.go <<'GO'
//go:build go1.23

package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/skycmd/libskycmd/bindings/go/skycmd"
)

// streamingBatch runs a streaming batch with a bad request in the middle: that request is
// its own pair's error and the stream goes on; the answers are ranged over with All().
func streamingBatch(m *skycmd.Model, request string, want *skycmd.Response) {
	answered, failed := 0, []string{}
	reqs := slices.Values([]string{request, "{bad", request})
	for resp, err := range m.DecideEach(context.Background(), reqs) {
		if err != nil {
			failed = append(failed, err.(*skycmd.Error).Code())
			continue
		}
		same := resp.InputTokens == want.InputTokens
		for id, a := range resp.All() { // (id, answer) in request order
			if w, ok := want.Answer(id); !ok || w.Value != a.Value {
				same = false
			}
		}
		if same {
			answered++
		}
	}
	fmt.Printf("streaming batch: %d answered, failed %v\n", answered, failed)
}
GO
cat > each_go122.go <<'GO'
//go:build !go1.23

package main

import (
	"fmt"

	"github.com/skycmd/libskycmd/bindings/go/skycmd"
)

func streamingBatch(*skycmd.Model, string, *skycmd.Response) {
	fmt.Println("streaming batch: needs Go 1.23")
}
GO
go build -o consumer .
# A prefix install is not on the loader's path: say where it is, as its user would.
out=$(env -u SKYCMD_DEFAULT_MODEL LD_LIBRARY_PATH="$SKYCMD_PREFIX/lib" ./consumer "$SKYCMD_CONSUMER_MODEL" "$SKYCMD_CONSUMER_REQUEST" "$SKYCMD_CONSUMER_DUMP")
echo "$out"
if go list -f '{{context.ReleaseTags}}' runtime | grep -qw go1.23; then
    grep -qxF "streaming batch: 2 answered, failed [SKYCMD_E_JSON]" <<<"$out" ||
        { echo "the streaming batch did not give 2 answers and one SKYCMD_E_JSON"; exit 1; }
fi
# the built-in model of the prefix, found beside the installed library
grep -qxF "built-in model s1-pico-flappy: $(realpath "$SKYCMD_PREFIX")/share/skycmd/models/s1-pico-flappy.gguf" <<<"$out" ||
    { echo "the built-in model was not found in the prefix"; exit 1; }
