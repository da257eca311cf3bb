# toolchains.sh - sourced by tools/setup.sh and tools/test-all.sh (bash): puts the binding
# toolchains on PATH in one place, so that what setup.sh checks is what the tests run.
#   - the project's pinned CI venv (.venv-ci: swig, typesafe-sdk), first
#   - Go: /usr/local/go (a go.dev install), else Debian's golang-1.22 from bookworm-backports
#     (/usr/lib/go-1.22/bin; its package does not put `go` on PATH)
#   - Rust: ~/.cargo/bin (rustup), else Debian's cargo-web/rustc-web (/usr/bin)
# Requires: $root (the repository's top directory).
export PATH="$root/.venv-ci/bin:/usr/local/go/bin:/usr/lib/go-1.22/bin:$HOME/.cargo/bin:$PATH"
