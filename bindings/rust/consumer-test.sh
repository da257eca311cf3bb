#!/usr/bin/env bash
# consumer-test.sh WORKDIR - the Rust consumers of bindings/run-consumers.sh (see its header
# for the contract). Two new Cargo projects in WORKDIR, both running consumer/main.rs on the
# example request (decide, then decide_each on it, a malformed request and it again):
#   system/   depends on `skycmd` by path ($SKYCMD_REPO/bindings/rust/skycmd) with the
#             default features: links $SKYCMD_PREFIX's libskycmd.so found through pkg-config
#             (PKG_CONFIG_PATH=$SKYCMD_PREFIX/lib/pkgconfig) and runs with LD_LIBRARY_PATH set
#             to the prefix's libdir, as a user of a prefix install does.
#   bundled/  depends on the packaged crates (bindings/rust/package.sh; the .crate files
#             unpacked, `[patch.crates-io]` pointing skycmd-sys at its unpacked crate, the
#             documented way to use .crate files without a registry) with feature `bundled`:
#             built with PKG_CONFIG_PATH not pointing at the prefix, checked (readelf) not to
#             need libskycmd.so, run without LD_LIBRARY_PATH; writes $SKYCMD_CONSUMER_DUMP.
# The two dumps must be identical. Both projects start from bindings/rust/Cargo.lock, so
# they build with the pinned cc/pkg-config (CARGO_NET_OFFLINE=true works once the registry
# cache holds them). env: CARGO (default cargo).
set -euo pipefail
work=$(realpath "$1")
repo=$SKYCMD_REPO
cargo=${CARGO:-cargo}
here="$repo/bindings/rust"

new_project() { # DIR DEPENDENCY-LINES
    mkdir -p "$1/src"
    cp "$here/consumer/main.rs" "$1/src/main.rs"
    cp "$here/Cargo.lock" "$1/Cargo.lock"
    cat > "$1/Cargo.toml" <<TOML
[package]
name = "skycmd-consumer"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
$2
TOML
}

echo "-- toolchain: $("$cargo" --version), $("${RUSTC:-rustc}" --version)"
echo "-- rust consumer 1: path dependency, system library of the prefix"
new_project "$work/system" "skycmd = { path = \"$here/skycmd\" }"
(cd "$work/system" && "$cargo" build --release 2>&1 | tail -3)
bin="$work/system/target/release/skycmd-consumer"
readelf -d "$bin" | grep -q 'NEEDED.*libskycmd\.so' || { echo "system consumer does not link libskycmd.so"; exit 1; }
libdir=$(pkg-config --variable=libdir skycmd)
LD_LIBRARY_PATH="$libdir" ldd "$bin" | grep libskycmd
out=$(env -u SKYCMD_DEFAULT_MODEL LD_LIBRARY_PATH="$libdir" "$bin" "$SKYCMD_CONSUMER_MODEL" "$SKYCMD_CONSUMER_REQUEST" "$work/system.txt")
echo "$out"
grep -qxF "stream: same SKYCMD_E_JSON same" <<<"$out" || { echo "decide_each did not stream per-request results"; exit 1; }
# the built-in model of the prefix, found beside the installed library
grep -qxF "built-in model s1-pico-flappy: $(realpath "$SKYCMD_PREFIX")/share/skycmd/models/s1-pico-flappy.gguf" <<<"$out" ||
    { echo "the built-in model was not found in the prefix"; exit 1; }

echo "-- rust consumer 2: the packaged crates with feature bundled, no installed libskycmd"
CARGO_PACKAGE_FLAGS=--no-verify "$here/package.sh" "$work/crates" | tail -2
mkdir -p "$work/unpacked"
for c in "$work"/crates/*.crate; do tar -xzf "$c" -C "$work/unpacked"; done
sys_dir=$(ls -d "$work"/unpacked/skycmd-sys-*)
api_dir=$(ls -d "$work"/unpacked/skycmd-[0-9]*)
new_project "$work/bundled" "skycmd = { path = \"$api_dir\", features = [\"bundled\"] }

[patch.crates-io]
skycmd-sys = { path = \"$sys_dir\" }"
# The prefix must not be found: pkg-config sees only the system's .pc files (cJSON, utf8proc).
(cd "$work/bundled" && env -u PKG_CONFIG_PATH "$cargo" build --release 2>&1 | tail -3)
bin="$work/bundled/target/release/skycmd-consumer"
if readelf -d "$bin" | grep 'NEEDED.*libskycmd'; then echo "the bundled consumer needs libskycmd.so"; exit 1; fi
echo "NEEDED of the bundled consumer: $(readelf -d "$bin" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
env -u LD_LIBRARY_PATH -u SKYCMD_DEFAULT_MODEL "$bin" "$SKYCMD_CONSUMER_MODEL" "$SKYCMD_CONSUMER_REQUEST" "$SKYCMD_CONSUMER_DUMP"

cmp "$work/system.txt" "$SKYCMD_CONSUMER_DUMP" || { echo "the system and bundled consumers answer differently"; exit 1; }
echo "-- rust consumers: both answer identically"
