#!/usr/bin/env bash
# nonroot-build-check.sh - the Java binding builds as an ordinary user and changes nothing on
# the system (issue 40). `mvn install -DskipTests` of a copy of bindings/java (with
# tools/build-static-deps.sh and tools/debian-source.sh beside it, as in the checkout) runs
# as a user who is not root, from a directory of its own, with its own HOME and a copy of
# the local Maven repository (Maven downloads into the copy what it lacks, e.g. the jar and
# install plugins that `mvn test` never needed); the static cJSON and utf8proc are fetched and
# compiled on the way (Debian's source packages through a private apt configuration). Then:
# the build succeeded, the jar is in the copied repository, and /etc/apt is unchanged (every
# file's path, size, mtime and mode the same: no deb-src entry added).
#
# As root the build runs as uid/gid 65534 (nobody; SKYCMD_BUILD_UID=N for another) through
# setpriv, so no user is created; as another user it runs as that user. The library comes
# from the caller's pkg-config (PKG_CONFIG_PATH, as for `mvn install`): its header and
# libskycmd.a are copied into a prefix of the user's. env: MAVEN_REPO_LOCAL (default
# ~/.m2/repository) is copied, never written.
# Takes about 15 s (the apt source indexes are fetched each time, as a first build does).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
repo_local=${MAVEN_REPO_LOCAL:-$HOME/.m2/repository}
[ -d "$repo_local" ] || { echo "nonroot-build-check: no Maven repository at $repo_local"; exit 1; }
: "${JAVA_HOME:=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}"

work=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-nonroot.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/bindings" "$work/src/tools" "$work/home"
# The tree the build reads, as in a checkout (target/ left out: a fresh build).
tar -C "$root/bindings" --exclude=java/target -cf - java | tar -C "$work/src/bindings" -xf -
cp "$root/tools/build-static-deps.sh" "$root/tools/debian-source.sh" "$work/src/tools/"
cp -a "$repo_local" "$work/m2"
# The library as that user would have it installed (libskycmd-dev: readable by everyone): the
# caller's header and libskycmd.a, which may sit where that user cannot read (/root/...).
mkdir -p "$work/prefix/include" "$work/prefix/lib/pkgconfig"
# pc_file OPTION FLAG FILE: FILE in the first directory of `pkg-config OPTION skycmd` (its
# FLAG-prefixed words) that holds it, copied into the directory $4; fails when none does.
pc_file() {
    local d
    for d in $(pkg-config "$1" skycmd | tr ' ' '\n' | sed -n "s/^$2//p"); do
        [ -f "$d/$3" ] && { cp "$d/$3" "$4/"; return 0; }
    done
    echo "nonroot-build-check: no $3 in the directories of 'pkg-config $1 skycmd' (PKG_CONFIG_PATH)"
    return 1
}
pc_file --cflags-only-I -I skycmd.h "$work/prefix/include" || exit 1
pc_file --libs-only-L -L libskycmd.a "$work/prefix/lib" || exit 1
printf 'prefix=%s\nName: skycmd\nDescription: libskycmd\nVersion: %s\nLibs: -L${prefix}/lib -lskycmd\nCflags: -I${prefix}/include\n' \
    "$work/prefix" "$(pkg-config --modversion skycmd)" > "$work/prefix/lib/pkgconfig/skycmd.pc"

if [ "$(id -u)" -eq 0 ]; then
    uid=${SKYCMD_BUILD_UID:-65534}
    chown -R "$uid:$uid" "$work"
    as_user=(setpriv --reuid="$uid" --regid="$uid" --clear-groups)
else
    uid=$(id -u)
    as_user=()
fi
[ "$uid" -ne 0 ] || { echo "nonroot-build-check: SKYCMD_BUILD_UID must not be 0"; exit 1; }

apt_state() { find /etc/apt -printf '%p %s %T@ %m\n' 2>/dev/null | sort; }
apt_state > "$work/apt.before"

echo "-- mvn install -DskipTests as uid $uid (HOME=$work/home)"
rc=0
# (from the copy: the caller's directory, e.g. /root/..., may be closed to that user)
(cd "$work/src/bindings/java" &&
 "${as_user[@]}" env -i PATH="$PATH" HOME="$work/home" JAVA_HOME="$JAVA_HOME" \
    PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" ${CC:+CC="$CC"} TMPDIR="$work/home" \
    mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$work/m2" -f "$work/src/bindings/java/pom.xml" \
        -DskipTests install) > "$work/build.log" 2>&1 || rc=$?
apt_state > "$work/apt.after"

status=0
if [ $rc -ne 0 ]; then
    echo "nonroot-build-check: the build as uid $uid failed (exit $rc):"
    tail -n 30 "$work/build.log"
    status=1
fi
version=$(sed -n '/<artifactId>skycmd<\/artifactId>/{n;s/.*<version>\(.*\)<\/version>.*/\1/p;q}' "$here/pom.xml")
jar=$work/m2/org/skycmd/skycmd/$version/skycmd-$version.jar
if [ $rc -eq 0 ]; then
    if [ -f "$jar" ] && [ "$(stat -c %u "$jar")" = "$uid" ]; then
        echo "   installed $(basename "$jar") ($(stat -c %s "$jar") bytes), owned by uid $uid"
    else
        echo "nonroot-build-check: no jar installed by uid $uid at $jar"; status=1
    fi
    grep -q 'debian-source.sh: fetching' "$work/build.log" ||
        { echo "nonroot-build-check: the build did not fetch the Debian sources itself"; status=1; }
fi
if cmp -s "$work/apt.before" "$work/apt.after"; then
    echo "   /etc/apt unchanged ($(wc -l < "$work/apt.after") entries)"
else
    echo "nonroot-build-check: /etc/apt changed:"; diff "$work/apt.before" "$work/apt.after" | head -n 20; status=1
fi
[ $status -eq 0 ] && echo "nonroot-build-check: PASS (built as uid $uid, nothing on the system changed)"
exit $status
