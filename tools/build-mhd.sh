#!/usr/bin/env bash
# build-mhd.sh [PREFIX [HOST]] - build libmicrohttpd 1.0.1 (static, position-independent) from
# Debian's own source package into PREFIX (default: .deps/mhd in the repository), for
# `skycmd serve`'s strict request framing. HOST, a GNU triplet such as aarch64-linux-gnu,
# cross-compiles with HOST-gcc (tools/test-arm64.sh); without it, the build machine's cc.
#
# Why: Debian bookworm ships libmicrohttpd 0.9.75, which merges an obsolete folded header
# line into the previous header whatever its settings; RFC 9112 5.2 wants it refused, and
# 1.0 (rewritten request parser, MHD_OPTION_CLIENT_DISCIPLINE_LVL) refuses it. 1.0.1 is
# Debian trixie's version, so the source comes from Debian's archive (apt checks it against
# the signed Sources index), not from anywhere else. Nothing of it is committed.
#
# CMake finds the result through pkg-config: tools/toolchains.sh puts
# PREFIX/lib/pkgconfig on PKG_CONFIG_PATH when it exists. Systems whose libmicrohttpd is
# already >= 1.0 (Debian trixie, Homebrew) need none of this.
# Requires: build-essential, apt (Debian). Idempotent: an existing build is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
prefix=${1:-$root/.deps/mhd}
host=${2:-}
cross=()
[ -n "$host" ] && cross=(--host="$host" CC="$host-gcc")
version=1.0.1
debian_version=1.0.1-4

if [ "$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" PKG_CONFIG_LIBDIR="$prefix/lib/pkgconfig" \
        pkg-config --modversion libmicrohttpd 2>/dev/null || true)" = "$version" ] &&
   [ -f "$prefix/lib/libmicrohttpd.a" ]; then
  echo "tools/build-mhd.sh: libmicrohttpd $version already in $prefix"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/archives/partial"
# A private apt configuration: trixie's source index only, nothing added to the system's.
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
  > "$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/archives"
          -o APT::Sandbox::User=root -o DPkg::Lock::Timeout=600)
echo "tools/build-mhd.sh: fetching Debian's source package libmicrohttpd $debian_version"
apt-get "${apt_opts[@]}" update -qq
(cd "$work" && apt-get "${apt_opts[@]}" source --download-only -qq "libmicrohttpd=$debian_version")
tar -xzf "$work/libmicrohttpd_$version.orig.tar.gz" -C "$work"
src="$work/libmicrohttpd-$version"

echo "tools/build-mhd.sh: building libmicrohttpd $version${host:+ for $host} into $prefix"
# Only what the server uses: no TLS, no auth helpers, no POST processor, no upgrade; static
# with PIC so it links into the skycmd executable and leaves no runtime dependency.
(cd "$src" &&
 ./configure -q "${cross[@]}" --prefix="$prefix" --enable-static --disable-shared --with-pic \
   --disable-https --disable-curl --disable-doc --disable-examples --disable-tools \
   --disable-dauth --disable-bauth --disable-postprocessor --disable-httpupgrade \
   > "$work/configure.log" 2>&1 || { tail -30 "$work/configure.log"; exit 1; }
 make -s -j"$(nproc)" -C src/microhttpd > "$work/make.log" 2>&1 || { tail -30 "$work/make.log"; exit 1; }
 make -s -C src/microhttpd install > /dev/null
 make -s -C src/include install > /dev/null
 make -s install-pkgconfigDATA > /dev/null)
# the source's licence beside the library (LGPL-2.1+: the packages that embed it ship it too)
install -m 644 "$src/COPYING" "$prefix/COPYING.libmicrohttpd"
echo "tools/build-mhd.sh: libmicrohttpd $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --modversion libmicrohttpd) in $prefix"
