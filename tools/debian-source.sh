#!/usr/bin/env bash
# debian-source.sh DEST PKG... - fetch Debian source packages into DEST and unpack them, as
# any user, changing nothing on the system.
#
# PKG is what `apt-get source` takes: NAME, NAME=VERSION or NAME/SUITE (bookworm, trixie).
# apt runs with a private configuration under DEST/.apt: Debian's signed source indexes for
# bookworm and trixie only, its own lists and caches, no root, no sources.list entry added.
# apt checks every file against the signed Sources index (debian-archive-keyring), and
# dpkg-source applies Debian's patches. Each unpacked tree is DEST/NAME-UPSTREAMVERSION/.
# A package already unpacked in DEST is not fetched again.
#
# Needs: apt, dpkg-dev (dpkg-source), debian-archive-keyring.
# Used by tools/build-static-deps.sh, tools/macos-cross.sh and tools/build-wasm.sh.
set -euo pipefail
dest=$(realpath -m "${1:?usage: debian-source.sh DEST PKG...}")
shift
[ $# -gt 0 ] || { echo "usage: debian-source.sh DEST PKG..." >&2; exit 2; }
command -v dpkg-source >/dev/null || { echo "debian-source.sh: needs dpkg-source (dpkg-dev)" >&2; exit 1; }

# The stamp names exactly what was asked for, so another list fetches again.
stamp=$dest/.fetched-$(printf '%s\n' "$@" | sort | tr '\n/=' ' __' | tr -s ' ' | sed 's/ $//;s/ /+/g')
[ -f "$stamp" ] && exit 0

apt_dir=$dest/.apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/cache"
for suite in bookworm trixie; do
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main"
done > "$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
          -o "Dir::Cache::Archives=$apt_dir/archives" -o "Debug::NoLocking=1"
          -o APT::Sandbox::User="$(id -un)" -o DPkg::Lock::Timeout=600)
echo "debian-source.sh: fetching $* into $dest" >&2
apt-get "${apt_opts[@]}" update -qq
(cd "$dest" && apt-get "${apt_opts[@]}" source --download-only -qq "$@")
(cd "$dest" && for dsc in *.dsc; do
   dir=$(sed -n 's/^Source: //p' "$dsc")-$(sed -n 's/^Version: //p' "$dsc" | sed 's/^[0-9]*://; s/-[^-]*$//')
   [ -d "$dir" ] || dpkg-source -q -x "$dsc" "$dir" >/dev/null 2>&1 ||
     { echo "debian-source.sh: dpkg-source -x $dsc failed" >&2; exit 1; }
 done)
touch "$stamp"
