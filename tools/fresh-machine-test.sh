#!/usr/bin/env bash
# fresh-machine-test.sh - the proof that README's two commands work on a really fresh Debian
# bookworm machine: debootstrap a clean root (minbase: essential packages + apt, nothing else),
# git-clone this repository's HEAD into it (no work tree files, no build dirs), and run, as root
# in a chroot with an empty environment:
#     tools/setup.sh && tools/run-example.sh
#     tools/setup.sh --all && tools/test-all.sh
# printing each command's exit status and time and the test runners' summary lines. Exit status
# 0 only when both commands exit 0. Run as root, on Debian (installs debootstrap if missing).
#
# usage: tools/fresh-machine-test.sh [--keep] [--only-setup] [--dir DIR] [--log FILE]
#                                    [--cache-dir DIR] [--mirror URL] [--extra-ca FILE]... [--no-host-ca]
#                                    [--stage 'NAME=COMMAND']...
#   --stage N=CMD  after README's two commands, run CMD in the same root as a stage named N
#                  (CI: the arm64 tests under qemu and the macOS cross-link); its exit status
#                  counts like theirs
#   --keep         keep the root (DIR/root) for debugging; mounts are still undone
#   --only-setup   run the first command and `tools/setup.sh --all`, not tools/test-all.sh
#   --dir DIR      work directory (default: a new /var/tmp/skycmd-fresh.XXXXXX, removed at the end)
#   --log FILE     the full output of the commands inside (default: DIR/../skycmd-fresh-<time>.log)
#   --cache-dir D  debootstrap's --cache-dir: Debian's .deb files of the base system only, kept
#                  between runs to save the download (debootstrap checks them against the signed
#                  Release file); nothing else is cached
#   --mirror URL   Debian archive (default http://deb.debian.org/debian)
#   --extra-ca F   a CA certificate the network needs (a TLS-intercepting egress proxy), put into
#                  the root's /usr/local/share/ca-certificates; default: the CA certificates this
#                  machine added itself (regular *.pem files with CA:TRUE in /etc/ssl/certs and
#                  /usr/local/share/ca-certificates/*.crt), none with --no-host-ca. They are trust
#                  anchors of the network, like resolv.conf, not toolchains: Debian's
#                  ca-certificates (installed by setup.sh) builds the root's own bundle from them.
#
# Nothing else from this machine reaches the root: no bind mounts but the root itself (a
# private mount point, as a machine's "/" is) and the kernel's /proc, /sys,
# /dev (a fresh devpts and /dev/shm), `env -i` with PATH, HOME, LANG (and CI, and the CA bundle
# variables when a CA is given). Processes left in the root are killed and all mounts undone on
# exit, failure or interrupt.
set -euo pipefail
{ # the whole script is read before it runs: an edit of this file during a run cannot break it

here=$(cd "$(dirname "$0")/.." && pwd)
keep=0 only_setup=0 dir="" log="" cache_dir="" mirror=http://deb.debian.org/debian host_ca=1
extra_ca=() stages=()
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=1; shift ;;
    --only-setup) only_setup=1; shift ;;
    --dir) dir=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --cache-dir) cache_dir=$(realpath -m "$2"); shift 2 ;;
    --mirror) mirror=$2; shift 2 ;;
    --extra-ca) extra_ca+=("$(realpath "$2")"); shift 2 ;;
    --no-host-ca) host_ca=0; shift ;;
    --stage) case "$2" in *=*) stages+=("$2") ;; *) echo "fresh-machine-test: --stage takes NAME=COMMAND" >&2; exit 2 ;; esac
             shift 2 ;;
    -h|--help) sed -n '2,37p' "$0"; exit 0 ;;
    *) echo "fresh-machine-test: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "fresh-machine-test: run as root (debootstrap, mount, chroot)" >&2; exit 2; }

if ! command -v debootstrap >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends debootstrap ||
    { apt-get -o DPkg::Lock::Timeout=600 update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends debootstrap; }
fi

if [ "$host_ca" = 1 ] && [ "${#extra_ca[@]}" -eq 0 ]; then
  for f in /etc/ssl/certs/*.pem /usr/local/share/ca-certificates/*.crt; do
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    openssl x509 -in "$f" -noout -text 2>/dev/null | grep -q 'CA:TRUE' && extra_ca+=("$f")
  done
fi

commit=$(git -C "$here" rev-parse HEAD)
if [ -n "$(git -C "$here" status --porcelain --untracked-files=no)" ]; then
  echo "fresh-machine-test: note: uncommitted changes in $here are not tested (only HEAD $commit)"
fi

made_dir=0
if [ -z "$dir" ]; then dir=$(mktemp -d /var/tmp/skycmd-fresh.XXXXXX); made_dir=1; fi
mkdir -p "$dir"; dir=$(realpath "$dir")
R=$dir/root
[ ! -e "$R" ] || { echo "fresh-machine-test: $R exists (a kept root?): remove it or give another --dir" >&2; exit 2; }
[ -n "$log" ] || log="$(dirname "$dir")/skycmd-fresh-$(date -u +%Y%m%dT%H%M%SZ).log"
: > "$log"

debootstrap_pgid=""
cleanup() {
  local rc=$? pid m
  trap - EXIT INT TERM
  [ -n "$debootstrap_pgid" ] && kill -TERM -- "-$debootstrap_pgid" 2>/dev/null
  # processes started inside the root (servers, daemons) would keep its mounts busy
  for pid in /proc/[0-9]*; do
    [ "$(readlink "$pid/root" 2>/dev/null)" = "$R" ] && kill -KILL "${pid#/proc/}" 2>/dev/null
  done
  # every mount under the root, deepest first, the root's own last: ours, and any
  # debootstrap left when stopped
  while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || echo "fresh-machine-test: cannot unmount $m" >&2
  done < <(findmnt -rn -o TARGET | grep "^$R\(/\|$\)" | sort -r)
  if findmnt -rn -o TARGET | grep -q "^$R\(/\|$\)"; then
    echo "fresh-machine-test: mounts left under $R; not removing it" >&2
  elif [ "$keep" = 1 ]; then
    echo "fresh-machine-test: kept the root: $R"
  elif [ "$made_dir" = 1 ]; then
    rm -rf --one-file-system "$dir"
  else
    rm -rf --one-file-system "$R"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mount_in() {  # mount_in TARGET MOUNT-ARGS...
  mkdir -p "$R$1"; mount "${@:2}" "$R$1"
}

now() { date +%s; }
elapsed() { local s=$1; printf '%dm%02ds' $((s / 60)) $((s % 60)); }
t_start=$(now)

echo "== debootstrap bookworm (minbase) into $R"
t0=$(now)
# (its own process group, so that cleanup can stop it)
setsid nice debootstrap --variant=minbase ${cache_dir:+--cache-dir="$cache_dir"} bookworm "$R" "$mirror" \
  > "$dir/debootstrap.log" 2>&1 &
debootstrap_pgid=$!
wait $debootstrap_pgid || { tail -n 30 "$dir/debootstrap.log"; echo "debootstrap failed"; exit 1; }
debootstrap_pgid=""
t_debootstrap=$(( $(now) - t0 ))
echo "debootstrap: $(elapsed $t_debootstrap)"

# a Debian installation's standard sources (security and updates too: rustc-web is there)
rm -f "$R/etc/apt/sources.list"
cat > "$R/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
cp /etc/resolv.conf "$R/etc/resolv.conf"
printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' > "$R/etc/hosts"
ca_env=()
if [ "${#extra_ca[@]}" -gt 0 ]; then
  mkdir -p "$R/usr/local/share/ca-certificates"
  for f in "${extra_ca[@]}"; do
    echo "network CA for the root: $f"
    cp "$f" "$R/usr/local/share/ca-certificates/$(basename "${f%.*}").crt"
  done
  bundle=/etc/ssl/certs/ca-certificates.crt
  # pip (its own certifi) and Node (its own CA list) trust the system bundle only when told
  ca_env=(SSL_CERT_FILE=$bundle PIP_CERT=$bundle REQUESTS_CA_BUNDLE=$bundle NODE_EXTRA_CA_CERTS=$bundle
          CURL_CA_BUNDLE=$bundle GIT_SSL_CAINFO=$bundle)
fi

# The root is a mount point of its own, and a private one, as a machine's "/" is: so a
# private mount namespace can be made inside it (`unshare --mount --propagation private`,
# which the bindings' checks use to hide libraries: a chroot's "/" that is no mount point
# refuses it), and nothing mounted inside reaches this machine.
mount --bind "$R" "$R"
mount --make-private "$R"
mount_in /proc -t proc proc
mount_in /sys -t sysfs sysfs
mount_in /dev --bind /dev
mount_in /dev/pts -t devpts devpts -o newinstance,ptmxmode=0666,mode=620
mount_in /dev/shm -t tmpfs shm -o mode=1777

echo "== clean clone of $commit into /root/libskycmd"
git clone -q --no-hardlinks "$here" "$R/root/libskycmd"
git -C "$R/root/libskycmd" checkout -q --detach "$commit"

inside() {  # inside NAME COMMAND: run COMMAND in the root's repository; times and exit status
  local name=$1 cmd=$2 t rc
  echo
  echo "== [$name] # $cmd"
  t=$(now)
  # in the background with `wait`, so that a TERM/INT trap runs at once (and kills what runs
  # inside) instead of after the command
  echo 1 > "$dir/rc"
  {
    nice chroot "$R" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin ${CI:+CI=$CI} "${ca_env[@]}" \
      /bin/bash -c "cd /root/libskycmd && $cmd" 2>&1
    echo $? > "$dir/rc"
  } | tee -a "$log" | { grep -a --line-buffered -vE "$apt_noise" || true; } &
  wait $! || true
  rc=$(cat "$dir/rc")
  t=$(( $(now) - t ))
  results+=("$name: exit $rc in $(elapsed $t)   # $cmd")
  return "$rc"
}
# dpkg's per-package lines go to the log only
apt_noise='^(Selecting previously unselected|Preparing to unpack|Unpacking |Setting up |\(Reading database|Processing triggers|update-alternatives: |debconf: |Created symlink|Adding |Updating certificates|[0-9]+ added, [0-9]+ removed|done\.$)'
results=()
status=0
inside "README 1" "tools/setup.sh && tools/run-example.sh" || status=1
if [ "$only_setup" = 1 ]; then
  inside "README 2 (setup only)" "tools/setup.sh --all" || status=1
else
  inside "README 2" "tools/setup.sh --all && tools/test-all.sh" || status=1
  for st in "${stages[@]}"; do
    inside "${st%%=*}" "${st#*=}" || status=1
  done
fi

# What the stages leave to be looked at, kept beside the log before the root goes: the
# demo page's screenshot from the Chromium stage (tests/browser/run.sh)
shot=$R/root/libskycmd/build/browser-artifacts/demo.png
if [ -s "$shot" ]; then
  cp "$shot" "${log%.log}-demo.png" && echo "artifact: ${log%.log}-demo.png ($(stat -c %s "$shot") bytes, the demo page in Chromium)"
fi

echo
echo "== test summaries seen inside the root (full log: $log)"
grep -aE '^===== |^----- [^:]+: [0-9]+ s$|^(ok|FAIL)[[:space:]]|^test result:|Tests run: [0-9]+, Failures|^# (pass|fail) |tests passed, [0-9]+ tests failed|^([a-z0-9-]+: )?[0-9]+ passed, [0-9]+ failed|^== [a-z]+: |^(go|java|node|rust|python|crosscheck|valgrind): |^consumers: |^crosscheck: |^  [a-z_.]+: |test-debs.sh: |^lintian|^[EW]: (skycmd|libskycmd)' "$log" |
  head -n 200 || true
echo
echo "== fresh machine (Debian bookworm chroot, commit ${commit:0:12})"
echo "debootstrap: $(elapsed $t_debootstrap)"
printf '%s\n' "${results[@]}"
echo "total: $(elapsed $(( $(now) - t_start )))"
exit "$status"
}
