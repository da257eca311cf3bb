#!/usr/bin/env bash
# check.sh SOURCE_DIR [RUBY] - the Homebrew formula template and tools/release-tarball.sh
# agree (ctest homebrew_formula):
#   - the template packaging/homebrew/skycmd.rb.in has the @VERSION@, @URL@ and @SHA256@
#     placeholders and no others, and one url and one sha256 line that use them;
#   - the script, run on the committed tree, fills every placeholder: the formula it writes
#     is the template with exactly those three substituted, its sha256 is the sha256 of
#     the tarball it made, its url and version name that tarball, whose top directory is
#     skycmd-X.Y.Z with the same version in include/skycmd.h;
#   - the filled formula is valid Ruby (`ruby -c`) when RUBY is given, else it passes a
#     structural check (one `class Skycmd < Formula`, blocks balanced, ends with `end`).
# Exit 77 (skipped) outside a git checkout: the script archives the committed tree.
set -uo pipefail
src=$(cd "$1" && pwd)
ruby=${2:-}
template=$src/packaging/homebrew/skycmd.rb.in
fail() { echo "FAIL: $*"; exit 1; }
git -C "$src" rev-parse --verify -q HEAD >/dev/null 2>&1 || { echo "not a git checkout: skipped"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-formula-check.XXXXXX")
trap 'rm -rf "$T"' EXIT

# the template
[ -f "$template" ] || fail "no $template"
placeholders=$(grep -oE '@[A-Z0-9_]+@' "$template" | sort -u | tr '\n' ' ')
[ "$placeholders" = "@SHA256@ @URL@ @VERSION@ " ] ||
  fail "the template's placeholders are [$placeholders], want @SHA256@ @URL@ @VERSION@"
[ "$(grep -c '^  url "@URL@"$' "$template")" -eq 1 ] || fail "the template needs one line '  url \"@URL@\"'"
[ "$(grep -c '^  sha256 "@SHA256@"$' "$template")" -eq 1 ] || fail "the template needs one line '  sha256 \"@SHA256@\"'"

# the script fills it
version=$(awk '/^#define SKYCMD_VERSION_STRING /{gsub(/"/, "", $3); print $3}' "$src/include/skycmd.h")
"$src/tools/release-tarball.sh" --formula "$T/skycmd.rb" "$T/dist" > "$T/log" || fail "release-tarball.sh: $(cat "$T/log")"
tarball=$T/dist/skycmd-$version.tar.gz
[ -f "$tarball" ] || fail "release-tarball.sh made no $tarball: $(cat "$T/log")"
sha=$(sha256sum "$tarball" | cut -d' ' -f1)
grep -qx "sha256 $sha" "$T/log" || fail "release-tarball.sh printed another sha256: $(cat "$T/log")"
f=$T/skycmd.rb
! grep -nE '@[A-Z0-9_]+@' "$f" || fail "placeholders left in the filled formula"
grep -qx "  sha256 \"$sha\"" "$f" || fail "the formula's sha256 is not the tarball's ($sha)"
url=$(sed -n 's/^  url "\(.*\)"$/\1/p' "$f")
[[ $url == */v$version/skycmd-$version.tar.gz ]] || fail "url '$url' does not name skycmd-$version.tar.gz"
sed -e "s|@VERSION@|$version|g" -e "s|@URL@|$url|g" -e "s|@SHA256@|$sha|g" "$template" |
  cmp -s - "$f" || fail "the filled formula differs from the template beyond its placeholders"
top=$(tar -tzf "$tarball" | head -1)
[ "${top%%/*}" = "skycmd-$version" ] || fail "the tarball's top directory is '${top%%/*}'"
tar -xzf "$tarball" -C "$T" "skycmd-$version/include/skycmd.h" || fail "no include/skycmd.h in the tarball"
grep -q "^#define SKYCMD_VERSION_STRING \"$version\"" "$T/skycmd-$version/include/skycmd.h" ||
  fail "the tarball's skycmd.h is not version $version"

# Ruby syntax, or the formula's shape
if [ -n "$ruby" ]; then
  "$ruby" -c "$f" >/dev/null || fail "ruby -c rejects the filled formula"
  how="ruby -c"
else
  [ "$(grep -c '^class Skycmd < Formula$' "$f")" -eq 1 ] || fail "no 'class Skycmd < Formula'"
  [ "$(tail -n 1 "$f")" = end ] || fail "the formula does not end with 'end'"
  # block openers (class, def, do, heredoc-free) against ends, heredoc bodies left out
  balance=$(awk '/<<~[A-Z]+$/ {tag=$NF; sub(/.*<<~/, "", tag); inh=1; next}
                 inh { if ($1 == tag) inh=0; next }
                 /^ *(class|def) / || / do( \|.*\|)?$/ {n++}
                 /^ *end$/ {n--}
                 END {print n}' "$f")
  [ "$balance" = 0 ] || fail "the formula's blocks do not balance ($balance)"
  how="structure (no ruby)"
fi
echo "homebrew formula: template and release-tarball.sh agree (version $version, sha256 $sha; $how)"
