# toolchains.sh - sourced by tools/setup.sh and tools/test-all.sh (bash): puts the binding
# toolchains on PATH in one place, so that what setup.sh checks is what the tests run.
#   - the project's pinned CI venv (.venv-ci: swig, typesafe-sdk), first
#   - Go: /usr/local/go (a go.dev install), else Debian's golang-1.22 from bookworm-backports
#     (/usr/lib/go-1.22/bin; its package does not put `go` on PATH)
#   - Rust: ~/.cargo/bin (rustup), else Debian's cargo-web/rustc-web (/usr/bin)
#   - libmicrohttpd: .deps/mhd (tools/build-mhd.sh) on PKG_CONFIG_PATH when it exists
# Requires: $root (the repository's top directory).
# libmicrohttpd >= 1.0 built by tools/build-mhd.sh (strict request framing), ahead of the
# system's 0.9.75, when it is there
if [ -f "$root/.deps/mhd/lib/pkgconfig/libmicrohttpd.pc" ]; then
  case ":${PKG_CONFIG_PATH:-}:" in
    *":$root/.deps/mhd/lib/pkgconfig:"*) ;;
    *) export PKG_CONFIG_PATH="$root/.deps/mhd/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" ;;
  esac
fi
export PATH="$root/.venv-ci/bin:/usr/local/go/bin:/usr/lib/go-1.22/bin:$HOME/.cargo/bin:$PATH"
