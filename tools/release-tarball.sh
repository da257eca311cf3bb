#!/usr/bin/env bash
# release-tarball.sh [--formula FILE] [--url-base URL] [OUTDIR] - the release source tarball
# OUTDIR/skycmd-X.Y.Z.tar.gz (default OUTDIR: ./dist) of the committed tree at HEAD
# (`git archive`; uncommitted changes are not in it), and the Homebrew formula for it:
# the template packaging/homebrew/skycmd.rb.in with every @NAME@ placeholder filled,
# written to FILE (default: OUTDIR/skycmd.rb):
#   @VERSION@  X.Y.Z (SKYCMD_VERSION_STRING of include/skycmd.h)
#   @URL@      URL/vX.Y.Z/skycmd-X.Y.Z.tar.gz (default URL: the project's releases)
#   @SHA256@   the tarball's sha256
# A placeholder the script does not know, or one left unfilled, is an error. Prints the
# tarball's path, its sha256 and the formula's path.
#
# Deterministic: the same tree gives the same bytes. git archive of a commit stores the
# commit id and the commit time, so the archive is made from the tree and repacked with
# sorted names, root ownership and one mtime: that of HEAD's newest commit that changed
# something in the tree. The tree holds only the template, so a release commits nothing
# back: run this at the release commit, tag it, upload the tarball to the formula's url
# and put the filled formula in the tap.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
template=$src/packaging/homebrew/skycmd.rb.in
formula=
url_base=https://example.invalid/skycmd/releases/download
while [ $# -gt 0 ]; do
  case $1 in
    --formula) formula=$2; shift 2 ;;
    --url-base) url_base=${2%/}; shift 2 ;;
    *) break ;;
  esac
done
out=${1:-$src/dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)
formula=${formula:-$out/skycmd.rb}
cd "$src"
version=$(awk '/^#define SKYCMD_VERSION_STRING /{gsub(/"/, "", $3); print $3}' include/skycmd.h)
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "release-tarball.sh: no version in include/skycmd.h"; exit 1; }
name=skycmd-$version
mtime=$(git log -1 --format=%ct HEAD -- .)

work=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-release.XXXXXX")
trap 'rm -rf "$work"' EXIT
git archive --format=tar --prefix="$name/" 'HEAD^{tree}' | tar -x -C "$work"
tar -C "$work" --sort=name --mtime="@$mtime" --owner=0 --group=0 --numeric-owner \
    --mode='go-w' --format=gnu -cf - "$name" | gzip -9n > "$out/$name.tar.gz"
sha=$(sha256sum "$out/$name.tar.gz" | cut -d' ' -f1)

# the formula: the template with its placeholders filled
url=$url_base/v$version/$name.tar.gz
unknown=$(grep -oE '@[A-Z0-9_]+@' "$template" | sort -u | grep -vxE '@(VERSION|URL|SHA256)@' || true)
[ -z "$unknown" ] || { echo "release-tarball.sh: $template has placeholders this script does not fill: $unknown"; exit 1; }
sed -e "s|@VERSION@|$version|g" -e "s|@URL@|$url|g" -e "s|@SHA256@|$sha|g" "$template" > "$formula.tmp"
if grep -qE '@[A-Z0-9_]+@' "$formula.tmp"; then
  rm -f "$formula.tmp"; echo "release-tarball.sh: placeholders left in $formula"; exit 1
fi
grep -q "^  sha256 \"$sha\"$" "$formula.tmp" && grep -qF "  url \"$url\"" "$formula.tmp" ||
  { rm -f "$formula.tmp"; echo "release-tarball.sh: the template has no url/sha256 line"; exit 1; }
mv "$formula.tmp" "$formula"
echo "$out/$name.tar.gz"
echo "sha256 $sha"
echo "formula $formula"
