#!/usr/bin/env bash
# What an output path names decides how it is written (issue 37, "never destroy what is not
# ours"; src/util/util.h, sk_output_resolve): a character device or a FIFO is written in
# place as a stream and stays what it was; a symbolic link is followed as `cp` follows it
# (the link stays a link, its target gets the bytes; a dangling link gets its target
# created); a directory is refused with a clear message; a full device or disk fails with
# the system's reason (strerror) and exit 1. Checked through `quantize`, `convert`,
# `random` (GGUF and --layout laya) and `decide --batch -o`.
#
# The device cases need root (mknod): they first use private nodes in the test directory
# (same major/minor as /dev/null and /dev/full, so a regression destroys only those), and
# only once those passed the real /dev/null and /dev/full. The full-disk case of
# `random --layout laya` mounts a 64 KiB tmpfs (root). Cases that cannot run print
# "SKIP: <case>: <why>"; they are never counted as passed. Exit 77 (ctest: skipped) only
# when no case at all could run. Usage: outputs.sh <cli> <source_dir> <binary_dir>
set -u
CLI=$1
SRC=$2
BIN=$3
T=$(mktemp -d "$BIN/cli_outputs.XXXXXX")
MNT=""
BG=""
cleanup() {
  [ -n "$BG" ] && kill "$BG" 2>/dev/null
  [ -n "$MNT" ] && umount "$MNT" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
ran=0
skipped=0
pass() { ran=$((ran + 1)); echo "ok: $*"; }
skip() { skipped=$((skipped + 1)); echo "SKIP: $*"; }
is_root=0
[ "$(id -u)" -eq 0 ] && is_root=1

# no temporary (<name>.skycmd-partial.<hex>) may be left in DIR
no_partials() { # DIR WHAT
  local left
  left=$(find "$1" -maxdepth 1 -name '*.skycmd-partial.*' 2>/dev/null)
  [ -z "$left" ] || fail "$2: temporary left behind: $left"
}

"$CLI" random s1-pico "$T/pico.gguf" >/dev/null 2>&1 || fail "random s1-pico"
"$CLI" quantize "$T/pico.gguf" "$T/ref.gguf" 2>/dev/null || fail "quantize to a regular file"
[ -s "$T/ref.gguf" ] || fail "the regular-file output is empty"

# --- character devices ----------------------------------------------------------------
# DEV: a device node; checks that quantize / convert / random succeed into a null device
null_case() { # DEV LABEL
  local dev=$1 label=$2 cmd
  for cmd in "quantize $T/pico.gguf" "convert --random s1-pico" "random s1-pico"; do
    # shellcheck disable=SC2086
    "$CLI" $cmd "$dev" >/dev/null 2>"$T/err" || fail "$label: '$cmd' failed: $(cat "$T/err")"
    [ -c "$dev" ] || fail "$label: '$cmd' replaced the device: $(ls -l "$dev")"
  done
  no_partials "$(dirname "$dev")" "$label"
  pass "$label: written as a stream, still a character device"
}
full_case() { # DEV LABEL
  local dev=$1 label=$2 rc cmd
  for cmd in "quantize $T/pico.gguf" "random s1-pico"; do
    # shellcheck disable=SC2086
    "$CLI" $cmd "$dev" >/dev/null 2>"$T/err"; rc=$?
    [ $rc -eq 1 ] || fail "$label: '$cmd' must exit 1 (got $rc)"
    grep -q "No space left on device" "$T/err" || fail "$label: '$cmd' message: $(cat "$T/err")"
    grep -q "$dev: write failed" "$T/err" || fail "$label: the message must name the output: $(cat "$T/err")"
    [ -c "$dev" ] || fail "$label: '$cmd' replaced the device"
  done
  no_partials "$(dirname "$dev")" "$label"
  pass "$label: 'No space left on device', exit 1, still a character device"
}
if [ $is_root -ne 1 ]; then
  for c in "private null device" "private full device" "/dev/null" "/dev/full" "random --layout laya onto a device"; do
    skip "$c: needs root (mknod; the real devices only after the private ones passed)"
  done
elif ! mknod "$T/null" c 1 3 2>/dev/null || ! mknod "$T/full" c 1 7 2>/dev/null ||
     ! : > "$T/null" 2>/dev/null; then
  for c in "private null device" "private full device" "/dev/null" "/dev/full" "random --layout laya onto a device"; do
    skip "$c: cannot make a usable device node in $T (nodev mount?)"
  done
else
  null_case "$T/null" "private null device"
  full_case "$T/full" "private full device"
  [ -c /dev/null ] && null_case /dev/null "/dev/null" || skip "/dev/null: not a character device here"
  [ -c /dev/full ] && full_case /dev/full "/dev/full" || skip "/dev/full: not a character device here"
  "$CLI" random s1-pico "$T/null" --layout laya >/dev/null 2>"$T/err"; rc=$?
  [ $rc -eq 1 ] || fail "random --layout laya onto a device must exit 1 (got $rc)"
  grep -q "is a character device, not a directory" "$T/err" || fail "laya onto a device: $(cat "$T/err")"
  [ -c "$T/null" ] || fail "random --layout laya replaced the device"
  pass "random --layout laya onto a device: refused, the device kept"
fi

# --- FIFO -------------------------------------------------------------------------------
# a background reader; the FIFO's bytes must equal the regular-file output
fifo_case() { # LABEL EXPECTED COMMAND... (the FIFO is $T/fifo)
  local label=$1 expect=$2 rc; shift 2
  rm -f "$T/fifo" "$T/from_fifo"
  mkfifo "$T/fifo" || { skip "$label: mkfifo failed"; return; }
  cat "$T/fifo" > "$T/from_fifo" &
  BG=$!
  timeout 60 "$@" >/dev/null 2>"$T/err"; rc=$?
  [ $rc -eq 0 ] || fail "$label: exit $rc: $(cat "$T/err")"
  wait "$BG" || fail "$label: the reader failed"
  BG=""
  [ -p "$T/fifo" ] || fail "$label: the FIFO was replaced"
  cmp -s "$T/from_fifo" "$expect" || fail "$label: the bytes read from the FIFO differ from a file's"
  no_partials "$T" "$label"
  pass "$label: streamed, the same bytes as a regular file, still a FIFO"
}
fifo_case "quantize into a FIFO" "$T/ref.gguf" "$CLI" quantize "$T/pico.gguf" "$T/fifo"
"$CLI" random s1-pico "$T/rand.gguf" >/dev/null 2>&1 || fail "random to a file"
fifo_case "random into a FIFO" "$T/rand.gguf" "$CLI" random s1-pico "$T/fifo"

# a FIFO nobody reads: the wait for a reader ends on SIGTERM (the CLI's handlers restart a
# blocking open(), so the library must not block in one); the process ends by the signal.
# A second signal after a second covers one that landed between two polls.
rm -f "$T/fifo"
mkfifo "$T/fifo"
"$CLI" quantize "$T/pico.gguf" "$T/fifo" >/dev/null 2>"$T/err" &
pid=$!
sleep 0.3
kill -TERM "$pid" 2>/dev/null
for i in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; [ "$i" -eq 10 ] && kill -TERM "$pid" 2>/dev/null; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; wait "$pid"; fail "SIGTERM did not end the wait for a FIFO's reader"; fi
wait "$pid"; rc=$?
[ $rc -eq 143 ] || fail "waiting for a FIFO's reader, SIGTERM: exit $rc (want 143): $(cat "$T/err")"
[ -p "$T/fifo" ] || fail "the unread FIFO was replaced"
no_partials "$T" "unread FIFO"
pass "FIFO without a reader: the wait ends on SIGTERM"

# a terminal named as the output: refused, as '-' on a terminal is (a pseudo-terminal)
if command -v python3 >/dev/null; then
  python3 - "$CLI" "$T/pico.gguf" <<'PY' || fail "terminal output"
import os, pty, subprocess, sys
m, s = pty.openpty()
r = subprocess.run([sys.argv[1], "quantize", sys.argv[2], os.ttyname(s)], capture_output=True,
                   text=True, timeout=60)
os.set_blocking(m, False)
try:
    got = os.read(m, 1 << 16)
except BlockingIOError:
    got = b""
if r.returncode != 1 or "is a terminal" not in r.stderr or got:
    sys.exit(f"exit {r.returncode}, {r.stderr!r}, {len(got)} bytes on the terminal")
PY
  pass "a terminal: refused, nothing written to it"
else
  skip "a terminal: no python3 for a pseudo-terminal"
fi

# --- symbolic links -----------------------------------------------------------------------
# a relative link in another directory: the target gets the bytes, the link stays
mkdir "$T/links" "$T/data"
printf 'old' > "$T/data/target.gguf"
chmod 640 "$T/data/target.gguf"
ln -s ../data/target.gguf "$T/links/out.gguf"
"$CLI" quantize "$T/pico.gguf" "$T/links/out.gguf" 2>"$T/err" || fail "quantize to a symlink: $(cat "$T/err")"
[ -L "$T/links/out.gguf" ] || fail "the symlink was replaced by a file"
[ "$(readlink "$T/links/out.gguf")" = "../data/target.gguf" ] || fail "the symlink was changed"
cmp -s "$T/data/target.gguf" "$T/ref.gguf" || fail "the symlink's target did not get the bytes"
[ "$(stat -c %a "$T/data/target.gguf")" = 640 ] || fail "the replaced file's mode was not kept: $(stat -c %a "$T/data/target.gguf")"
no_partials "$T/links" "symlink"
no_partials "$T/data" "symlink"
pass "symlink: the link stays, its target gets the bytes (mode kept)"

# a dangling link: its target is created
ln -s ../data/new.gguf "$T/links/dangling.gguf"
"$CLI" quantize "$T/pico.gguf" "$T/links/dangling.gguf" 2>"$T/err" || fail "quantize to a dangling symlink: $(cat "$T/err")"
[ -L "$T/links/dangling.gguf" ] || fail "the dangling symlink was replaced"
cmp -s "$T/data/new.gguf" "$T/ref.gguf" || fail "the dangling symlink's target was not created with the bytes"
# ... unless the target's directory does not exist: a clear error, the link unchanged
ln -s ../nowhere/x.gguf "$T/links/lost.gguf"
"$CLI" quantize "$T/pico.gguf" "$T/links/lost.gguf" >/dev/null 2>"$T/err"; rc=$?
[ $rc -eq 1 ] || fail "a dangling link into a missing directory must exit 1 (got $rc)"
grep -q "lost.gguf: cannot create: No such file or directory" "$T/err" || fail "dangling into nowhere: $(cat "$T/err")"
[ "$(readlink "$T/links/lost.gguf")" = "../nowhere/x.gguf" ] || fail "the dangling link was changed"
no_partials "$T/links" "dangling symlink"
pass "dangling symlink: target created (or a clear error when its directory is missing)"

# a loop of links: a clear error
ln -s loop "$T/links/loop"
"$CLI" quantize "$T/pico.gguf" "$T/links/loop" >/dev/null 2>"$T/err"; rc=$?
[ $rc -eq 1 ] && grep -q "Too many levels of symbolic links" "$T/err" || fail "link loop: exit $rc: $(cat "$T/err")"
pass "symlink loop: a clear error"

# --layout laya through a link to an empty directory: the directory is written, the link stays
mkdir "$T/ckdir"
ln -s ckdir "$T/cklink"
"$CLI" random s1-pico "$T/cklink" --layout laya >/dev/null 2>"$T/err" || fail "laya through a link: $(cat "$T/err")"
[ -L "$T/cklink" ] && [ -s "$T/ckdir/model.safetensors" ] && [ -s "$T/ckdir/encoder/config.json" ] ||
  fail "random --layout laya through a symlink: link or checkpoint wrong"
pass "random --layout laya through a symlink: the target directory is written, the link stays"

# --- directories --------------------------------------------------------------------------
mkdir "$T/adir"
touch "$T/adir/keep"
for cmd in "quantize $T/pico.gguf" "convert --random s1-pico" "random s1-pico"; do
  # shellcheck disable=SC2086
  "$CLI" $cmd "$T/adir" >/dev/null 2>"$T/err"; rc=$?
  [ $rc -eq 1 ] || fail "'$cmd' to a directory must exit 1 (got $rc)"
  grep -q "adir: is a directory" "$T/err" || fail "'$cmd' to a directory: $(cat "$T/err")"
  [ -d "$T/adir" ] && [ -e "$T/adir/keep" ] || fail "'$cmd' touched the directory"
done
no_partials "$T" "directory"
pass "directory: 'is a directory', exit 1, untouched"

# --- decide --batch -o: written in place as it goes (a stream by design) ----------------
printf '%s\n' "$(tr -d '\n' < "$SRC/examples/flappy-drone.json")" > "$T/in.jsonl"
"$CLI" decide "$T/pico.gguf" --batch "$T/in.jsonl" -o "$T/answers.jsonl" 2>/dev/null || fail "decide --batch -o FILE"
[ "$(wc -l < "$T/answers.jsonl")" -eq 1 ] || fail "decide --batch -o: one answer line expected"
printf 'old' > "$T/data/answers.jsonl"
ln -s ../data/answers.jsonl "$T/links/answers.jsonl"
"$CLI" decide "$T/pico.gguf" --batch "$T/in.jsonl" -o "$T/links/answers.jsonl" 2>/dev/null || fail "decide --batch -o LINK"
[ -L "$T/links/answers.jsonl" ] && cmp -s "$T/data/answers.jsonl" "$T/answers.jsonl" ||
  fail "decide --batch -o through a symlink"
fifo_case "decide --batch -o into a FIFO" "$T/answers.jsonl" "$CLI" decide "$T/pico.gguf" --batch "$T/in.jsonl" -o "$T/fifo"
"$CLI" decide "$T/pico.gguf" --batch "$T/in.jsonl" -o "$T/adir" >/dev/null 2>"$T/err"; rc=$?
[ $rc -eq 1 ] && grep -q "Is a directory" "$T/err" || fail "decide --batch -o DIR: exit $rc: $(cat "$T/err")"
if [ $is_root -eq 1 ] && [ -c "$T/full" ]; then
  "$CLI" decide "$T/pico.gguf" --batch "$T/in.jsonl" -o "$T/full" >/dev/null 2>"$T/err"; rc=$?
  [ $rc -eq 1 ] && grep -q "No space left on device" "$T/err" && [ -c "$T/full" ] ||
    fail "decide --batch -o onto a full device: exit $rc: $(cat "$T/err")"
fi
pass "decide --batch -o: a symlink's target, a FIFO, a directory refused"

# --- decide --batch -o: nothing of the user's lost --------------------------------------
# The input itself (by name or through a link) is refused, and the input stays; an output
# file is opened only once the input has given lines, so an unreadable or missing input
# leaves an existing output as it was and creates no new one; an empty input gives an
# empty output.
cp "$T/in.jsonl" "$T/keep.jsonl"
ln -s in.jsonl "$T/in-link.jsonl"
for o in "$T/in.jsonl" "$T/in-link.jsonl"; do
  "$CLI" decide "$T/pico.gguf" --batch "$T/in.jsonl" -o "$o" >/dev/null 2>"$T/err"; rc=$?
  [ $rc -eq 1 ] && grep -q "is the input file" "$T/err" || fail "decide --batch -o the input ($o): exit $rc: $(cat "$T/err")"
  cmp -s "$T/in.jsonl" "$T/keep.jsonl" || fail "decide --batch -o the input ($o) changed the input"
done
"$CLI" decide "$T/pico.gguf" --batch "$T/in-link.jsonl" -o "$T/in.jsonl" >/dev/null 2>"$T/err"; rc=$?
[ $rc -eq 1 ] && cmp -s "$T/in.jsonl" "$T/keep.jsonl" || fail "decide --batch LINK -o its target: exit $rc"
printf 'precious\n' > "$T/prev.jsonl"
for bad in "$T/adir" "$T/no-such-input"; do
  "$CLI" decide "$T/pico.gguf" --batch "$bad" -o "$T/prev.jsonl" >/dev/null 2>"$T/err"; rc=$?
  [ $rc -eq 1 ] && [ "$(cat "$T/prev.jsonl")" = precious ] ||
    fail "decide --batch $bad -o an existing file: exit $rc, the file now holds: $(head -c 80 "$T/prev.jsonl")"
  "$CLI" decide "$T/pico.gguf" --batch "$bad" -o "$T/new.jsonl" >/dev/null 2>&1
  [ ! -e "$T/new.jsonl" ] || fail "decide --batch $bad -o a new name created it"
done
: > "$T/empty.jsonl"
"$CLI" decide "$T/pico.gguf" --batch "$T/empty.jsonl" -o "$T/prev.jsonl" >/dev/null 2>&1 && [ ! -s "$T/prev.jsonl" ] ||
  fail "decide --batch of an empty input must leave an empty output"
pass "decide --batch -o: the input refused as the output, an unreadable input leaves the output as it was"

# --- standard streams ----------------------------------------------------------------------
# A closed stdin is not taken by the next file opened (the model would be read as the
# requests); reading '-' then fails by name.
"$CLI" decide "$T/pico.gguf" --batch - <&- >"$T/out" 2>"$T/err"; rc=$?
[ $rc -eq 1 ] && grep -q "standard input is closed" "$T/err" && [ ! -s "$T/out" ] ||
  fail "decide --batch - with stdin closed: exit $rc: $(head -c 300 "$T/err")"
# A request given as a pipe is read once, as the request (not peeked at as a model first),
# and a FIFO likewise (no wait for a second writer).
"$CLI" decide "$T/pico.gguf" - < "$SRC/examples/flappy-drone.json" > "$T/want" 2>/dev/null || fail "decide - (stdin)"
"$CLI" decide "$T/pico.gguf" <(cat "$SRC/examples/flappy-drone.json") > "$T/got" 2>"$T/err" && cmp -s "$T/want" "$T/got" ||
  fail "decide MODEL <(request): $(cat "$T/err")"
if "$CLI" decide <(cat "$SRC/examples/flappy-drone.json") > "$T/got" 2>"$T/err"; then
  grep -q '"answers"' "$T/got" || fail "decide <(request) on the built-in model: no answers"
elif grep -q "built-in model .* is not installed" "$T/err"; then
  skip "decide <(request) with the built-in model: not installed in this tree"
else
  fail "decide <(request) on the built-in model: $(cat "$T/err")"
fi
# stdout that cannot be written: exit 1 with the reason, for the help text too; a `-` output
# whose reader stops early leaves no temporary file behind.
if [ -w /dev/full ]; then
  for args in "--help" "decide --help" "serve --print-config" "inspect $T/pico.gguf"; do
    # shellcheck disable=SC2086
    "$CLI" $args > /dev/full 2>"$T/err"; rc=$?
    [ $rc -eq 1 ] && grep -q "No space left on device" "$T/err" || fail "skycmd $args > /dev/full: exit $rc: $(cat "$T/err")"
  done
else
  skip "stdout onto /dev/full: no writable /dev/full"
fi
tmpd=$(mktemp -d "$T/tmpdir.XXXXXX")
TMPDIR=$tmpd "$CLI" random s1-pico - 2>"$T/err" | head -c 4 >/dev/null
[ -z "$(ls -A "$tmpd")" ] || fail "random - | head left a temporary file: $(ls -A "$tmpd")"
pass "standard streams: closed stdin named, a pipe read once as the request, stdout failures reported"

# --- a full disk under random --layout laya ------------------------------------------------
if [ $is_root -ne 1 ]; then
  skip "random --layout laya on a full disk: needs root (mount -t tmpfs)"
elif mkdir "$T/tiny" && mount -t tmpfs -o size=64k tmpfs "$T/tiny" 2>/dev/null; then
  MNT=$T/tiny
  "$CLI" random s1-pico "$T/tiny/ck" --layout laya >/dev/null 2>"$T/err"; rc=$?
  [ $rc -eq 1 ] || fail "random --layout laya on a full disk must exit 1 (got $rc)"
  grep -q "write failed: No space left on device" "$T/err" || fail "full disk message: $(cat "$T/err")"
  grep -q "$T/tiny/ck/" "$T/err" || fail "full disk: the message must name the output: $(cat "$T/err")"
  [ -z "$(ls -A "$T/tiny")" ] || fail "a failed random --layout laya left files: $(ls -A "$T/tiny")"
  umount "$T/tiny" && MNT=""
  pass "random --layout laya on a full disk: 'No space left on device', nothing left"
else
  skip "random --layout laya on a full disk: cannot mount a tmpfs here"
fi

echo "outputs: $ran cases passed, $skipped skipped"
[ $ran -gt 0 ] || exit 77
exit 0
