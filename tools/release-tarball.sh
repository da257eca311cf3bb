#!/usr/bin/env bash
# release-tarball.sh [--formula FILE] [OUTDIR] - the release source tarball
# OUTDIR/skycmd-X.Y.Z.tar.gz (default OUTDIR: ./dist) of the committed tree at HEAD
# (`git archive`; uncommitted changes are not in it), and the Homebrew formula's url and
# sha256 set to it (default FILE: packaging/homebrew/skycmd.rb). Prints the path and sha256.
#
# Deterministic: the same tree gives the same bytes. git archive of a commit stores the
# commit id and the commit time, so the archive is made from the tree and repacked with
# sorted names, root ownership and one mtime: that of the newest commit that changed
# something in the tarball. The formula is not in the tarball (.gitattributes
# export-ignore): committing its new sha256 changes neither the tree nor that time.
# Release: run this at the release commit, commit the formula, tag, upload the tarball.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
formula=$src/packaging/homebrew/skycmd.rb
if [ "${1:-}" = --formula ]; then formula=$2; shift 2; fi
out=${1:-$src/dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$src"
version=$(awk '/^#define SKYCMD_VERSION_STRING /{gsub(/"/, "", $3); print $3}' include/skycmd.h)
name=skycmd-$version
mtime=$(git log -1 --format=%ct HEAD -- . ':(exclude)packaging/homebrew/skycmd.rb')

work=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-release.XXXXXX")
trap 'rm -rf "$work"' EXIT
git archive --format=tar --prefix="$name/" 'HEAD^{tree}' | tar -x -C "$work"
tar -C "$work" --sort=name --mtime="@$mtime" --owner=0 --group=0 --numeric-owner \
    --mode='go-w' --format=gnu -cf - "$name" | gzip -9n > "$out/$name.tar.gz"
sha=$(sha256sum "$out/$name.tar.gz" | cut -d' ' -f1)

# the formula: url of this version's tarball, its sha256
sed -i -E \
  -e "s|^(  url \"[^\"]*/releases/download/)v[^/]*/skycmd-[^\"]*\.tar\.gz\"|\1v$version/$name.tar.gz\"|" \
  -e "s|^(  sha256 \")[0-9a-f]{64}(\")|\1$sha\2|" "$formula"
grep -q "^  sha256 \"$sha\"" "$formula" || { echo "release-tarball.sh: could not set the sha256 in $formula"; exit 1; }
grep -q "^  url \".*/v$version/$name.tar.gz\"" "$formula" || { echo "release-tarball.sh: could not set the url in $formula"; exit 1; }
echo "$out/$name.tar.gz"
echo "sha256 $sha"
