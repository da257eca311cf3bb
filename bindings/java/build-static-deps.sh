#!/usr/bin/env bash
# build-static-deps.sh OUTDIR - the static archives the Java binding's JNI library links, so
# the jar needs neither libcjson.so.1 nor libutf8proc.so.2 at run time.
#
#   OUTDIR/lib/libcjson.a     built here: Debian ships no static cJSON, so the source comes
#                             from Debian's own source package (`apt-get source cjson`, the
#                             version of the installed libcjson-dev, Debian's patches applied)
#                             and cJSON.c is compiled with -fPIC into an archive. Nothing of
#                             it is ever committed; OUTDIR is a build directory.
#   OUTDIR/lib/libutf8proc.a  a link to Debian's libutf8proc.a (libutf8proc-dev), which is
#                             already position-independent.
#   OUTDIR/include/cjson/cJSON.h  the header the archive was built from.
#
# Needs: dpkg-dev (apt-get source unpacks with dpkg-source), a C compiler, libutf8proc-dev,
# and a deb-src entry for the Debian archive. If `apt-cache showsrc cjson` finds none, one is
# added in a private file, /etc/apt/sources.list.d/skycmd-src.sources (a copy of the system's
# deb entries with Types: deb-src), followed by `apt-get update`; that step needs root. An
# existing OUTDIR/lib/libcjson.a built from the same source version is reused.
# env: CC (default cc), SKYCMD_CJSON_SOURCE_DIR (an already unpacked cJSON source tree to use
# instead of apt-get source, e.g. on a machine without apt).
set -euo pipefail
out=$(realpath -m "${1:?usage: build-static-deps.sh OUTDIR}")
mkdir -p "$out/lib" "$out/include/cjson" "$out/src"
multiarch=$(${CC:-cc} -print-multiarch 2>/dev/null || true)

log() { echo "build-static-deps: $*" >&2; }

# ---- utf8proc: Debian's static archive --------------------------------------------------
utf8proc_a=
for d in ${multiarch:+/usr/lib/$multiarch} /usr/lib64 /usr/lib /usr/local/lib; do
    if [ -f "$d/libutf8proc.a" ]; then utf8proc_a=$d/libutf8proc.a; break; fi
done
if [ -z "$utf8proc_a" ]; then
    log "no libutf8proc.a (install libutf8proc-dev)"
    exit 1
fi
ln -sf "$utf8proc_a" "$out/lib/libutf8proc.a"

# ---- cJSON: Debian's source package, compiled here ---------------------------------------
# (Output captured first: grep -q would close the pipe early, and pipefail would see SIGPIPE.)
need_src_entry() { local s; s=$(apt-cache showsrc cjson 2>/dev/null || true); ! grep -q '^Package: cjson' <<< "$s"; }

add_src_entry() {
    log "no deb-src entry for cjson: adding the system's deb entries as deb-src in" \
        "/etc/apt/sources.list.d/skycmd-src.{sources,list}, then apt-get update"
    if [ "$(id -u)" -ne 0 ]; then log "adding a deb-src entry needs root"; exit 1; fi
    local f d822=/etc/apt/sources.list.d/skycmd-src.sources oneline=/etc/apt/sources.list.d/skycmd-src.list
    : > "$d822.tmp"
    : > "$oneline.tmp"
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && [ "$f" != "$d822" ] || continue
        # Each stanza with Types: deb, as Types: deb-src.
        awk 'BEGIN { RS = ""; ORS = "\n\n" } /(^|\n)Types:[^\n]*deb([ \t]|$|\n)/ {
                 sub(/(^|\n)Types:[^\n]*/, "\nTypes: deb-src"); sub(/^\n/, ""); print }' "$f" >> "$d822.tmp"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] && [ "$f" != "$oneline" ] || continue
        sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >> "$oneline.tmp"
    done
    for f in "$d822" "$oneline"; do
        if [ -s "$f.tmp" ]; then mv "$f.tmp" "$f"; else rm -f "$f.tmp"; fi
    done
    apt-get -o DPkg::Lock::Timeout=600 update -qq
}

if [ -n "${SKYCMD_CJSON_SOURCE_DIR:-}" ]; then
    src=$(realpath "$SKYCMD_CJSON_SOURCE_DIR")
    version=$(cd "$src" && { dpkg-parsechangelog -S Version 2>/dev/null || echo local; })
else
    command -v dpkg-source >/dev/null || { log "apt-get source needs dpkg-source (install dpkg-dev)"; exit 1; }
    if need_src_entry; then add_src_entry; fi
    # The source of the cJSON whose header is installed, so the archive and header agree;
    # the newest available if that exact version is gone from the archive.
    installed=$(dpkg-query -W -f='${Version}' libcjson-dev 2>/dev/null || true)
    available=$(apt-cache showsrc cjson | sed -n 's/^Version: //p' | sort -uV)
    if [ -n "$installed" ] && grep -qxF "$installed" <<< "$available"; then
        version=$installed
    else
        version=$(tail -n1 <<< "$available")
        log "libcjson-dev ${installed:-is not installed}; using the source of cjson $version"
    fi
    src_root=$out/src/cjson-$version
    if [ ! -f "$src_root/.unpacked" ]; then
        rm -rf "$src_root"
        mkdir -p "$src_root"
        log "apt-get source cjson=$version"
        (cd "$src_root" && apt-get source -qq -o APT::Sandbox::User=root "cjson=$version" >/dev/null)
        touch "$src_root/.unpacked"
    fi
    src=$(find "$src_root" -mindepth 2 -maxdepth 2 -name cJSON.c -printf '%h\n' | head -n1)
    [ -n "$src" ] || { log "no cJSON.c in the unpacked source ($src_root)"; exit 1; }
fi

# As Debian builds it (dpkg-buildflags: -O2, hardening) with upstream CMake's definitions for
# a static cJSON: locales on, symbols hidden (the JNI library exports only JNI functions).
flags="$(dpkg-buildflags --get CPPFLAGS 2>/dev/null || true) $(dpkg-buildflags --get CFLAGS 2>/dev/null || echo -O2)"
flags="$flags -fPIC -std=c89 -fvisibility=hidden -DENABLE_LOCALES -DCJSON_HIDE_SYMBOLS"
stamp=$out/lib/libcjson.a.stamp
if [ -f "$out/lib/libcjson.a" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version $flags" ]; then
    log "reusing $out/lib/libcjson.a (cjson $version)"
else
    log "compiling cJSON $version from $src"
    ${CC:-cc} -c $flags -o "$out/src/cJSON.o" "$src/cJSON.c"
    rm -f "$out/lib/libcjson.a"
    ar rcs "$out/lib/libcjson.a" "$out/src/cJSON.o"
    echo "$version $flags" > "$stamp"
fi
cp "$src/cJSON.h" "$out/include/cjson/cJSON.h"
log "ready: $out/lib/libcjson.a (cjson $version), $out/lib/libutf8proc.a -> $utf8proc_a"
