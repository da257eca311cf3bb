#!/usr/bin/env bash
# package.sh - make the self-contained .crate files of skycmd-sys and skycmd.
#
# usage: bindings/rust/package.sh [OUTDIR]   (default bindings/rust/target/crates)
#
# Cargo packages only files inside a crate's directory, and the `bundled` feature of
# skycmd-sys needs libskycmd's C sources. So this script stages a copy of the workspace in
# OUTDIR/stage, copies the repository's include/ and the library's modules of src/ (all but
# the programs cli/ and serve/, the rule of CMakeLists.txt) into stage/skycmd-sys/libskycmd/
# with the git commit (the library's build id), and runs `cargo package --workspace` there
# (cargo >= 1.89: it packages skycmd against the just-packaged skycmd-sys through a
# temporary local registry, so no crates.io release of skycmd-sys is needed). The
# verification step builds both packaged crates with `bundled`, from the .crate contents
# alone. Nothing is generated inside the repository's source tree.
#
# Result: OUTDIR/skycmd-sys-X.Y.Z.crate and OUTDIR/skycmd-X.Y.Z.crate (gzipped tarballs).
# env: CARGO (default cargo), CARGO_PACKAGE_FLAGS (extra flags, e.g. --offline).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(realpath -m "${1:-$here/target/crates}")
cargo=${CARGO:-cargo}
stage="$out/stage"

rm -rf "$stage"
mkdir -p "$stage"
tar -C "$here" --exclude=./skycmd-sys/libskycmd -cf - Cargo.toml Cargo.lock README.md skycmd-sys skycmd | tar -C "$stage" -xf -
lib="$stage/skycmd-sys/libskycmd"
mkdir -p "$lib/src"
cp -R "$root/include" "$lib/include"
for m in "$root"/src/*/; do
    case "$(basename "$m")" in
        cli | serve) ;;
        *) cp -R "$m" "$lib/src/" ;;
    esac
done
git -C "$root" rev-parse --short=12 HEAD > "$lib/GIT_COMMIT" 2>/dev/null || echo unknown > "$lib/GIT_COMMIT"

# shellcheck disable=SC2086
(cd "$stage" && "$cargo" package --workspace --features skycmd-sys/bundled --target-dir "$out/target" ${CARGO_PACKAGE_FLAGS:-})
cp "$out"/target/package/skycmd-sys-*.crate "$out"/target/package/skycmd-[0-9]*.crate "$out/"
ls -l "$out"/*.crate
