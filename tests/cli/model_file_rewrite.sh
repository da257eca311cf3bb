#!/usr/bin/env bash
# A model file written over in place while it is used (issue 37, item 2). A background
# writer keeps rewriting the file in place: `cp` of one model's bytes and then the other's
# (truncate, then write), `dd conv=notrunc` of one over the other (same inode, a mix on disk
# while it writes), truncations to 0 and to half. Meanwhile
#   1. `skycmd decide` runs again and again: each run answers exactly one of the two models'
#      reference answers (computed first), or fails cleanly (exit 1, a message on stderr,
#      e.g. "the model file changed while it was being read"); never a signal, never a mix;
#   2. `skycmd serve` (when built, with python3) answers requests and gets a SIGHUP every
#      ~0.1 s: every answer is one of the two models' (never a mix, never a 5xx), a torn
#      reload is logged and the old model kept, and the server neither dies nor fails to stop.
# Usage: model_file_rewrite.sh <cli> <src> <bin>. About 15-20 s.
set -u
CLI=$1
SRC=$2
BIN=$3
T=$(mktemp -d "$BIN/cli_model_file_rewrite.XXXXXX")
WRITER=
cleanup() {
  if [ -n "$WRITER" ]; then kill "$WRITER" 2>/dev/null; wait "$WRITER" 2>/dev/null; fi
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
REQ="$SRC/examples/flappy-drone.json"
DECIDE_SECONDS=${SKYCMD_REWRITE_DECIDE_SECONDS:-7}
SERVE_SECONDS=${SKYCMD_REWRITE_SERVE_SECONDS:-7}

"$CLI" random s1-nano "$T/a.gguf" --seed 1 >/dev/null || fail "random a"
"$CLI" random s1-nano "$T/b.gguf" --seed 2 >/dev/null || fail "random b"
ansA=$("$CLI" decide "$T/a.gguf" "$REQ") || fail "reference answer a"
ansB=$("$CLI" decide "$T/b.gguf" "$REQ") || fail "reference answer b"
[ "$ansA" != "$ansB" ] || fail "the two models answer alike: the test could not tell a mix"
printf '%s\n' "$ansA" > "$T/ans-a.json"
printf '%s\n' "$ansB" > "$T/ans-b.json"
cp "$T/a.gguf" "$T/served.gguf"

# The writer: every step rewrites served.gguf in place (the same inode throughout).
writer() {
  local f="$T/served.gguf" half
  half=$(( $(stat -c %s "$T/a.gguf") / 2 ))
  while :; do
    cp "$T/b.gguf" "$f"
    dd if="$T/a.gguf" of="$f" bs=64k conv=notrunc status=none
    truncate -s 0 "$f"
    cp "$T/a.gguf" "$f"
    truncate -s "$half" "$f"
    dd if="$T/b.gguf" of="$f" bs=16k conv=notrunc status=none
    cp "$T/b.gguf" "$f"
    dd if="$T/a.gguf" of="$f" bs=4k conv=notrunc status=none
  done
}
writer &
WRITER=$!

# 1. decide, again and again
n=0 a=0 b=0 changed=0 other=0
end=$((SECONDS + DECIDE_SECONDS))
while [ $SECONDS -lt $end ]; do
  n=$((n + 1))
  out=$("$CLI" decide "$T/served.gguf" "$REQ" 2>"$T/err"); rc=$?
  [ $rc -lt 128 ] || fail "decide run $n died of signal $((rc - 128)): $(cat "$T/err")"
  if [ $rc -eq 0 ]; then
    if [ "$out" = "$ansA" ]; then a=$((a + 1))
    elif [ "$out" = "$ansB" ]; then b=$((b + 1))
    else fail "decide run $n answered neither model: $out"; fi
  else
    [ $rc -eq 1 ] || fail "decide run $n exited $rc: $(cat "$T/err")"
    grep -q '^skycmd decide: .' "$T/err" || fail "decide run $n failed without a message: $(cat "$T/err")"
    if grep -q 'the model file changed while it was being read' "$T/err"; then changed=$((changed + 1))
    else other=$((other + 1)); fi
  fi
done
echo "decide: $n runs: $a answered as model a, $b as model b, $changed refused (changed while read), $other other clean errors"
[ $((a + b)) -gt 0 ] || fail "no decide run answered at all"

# 2. serve, with SIGHUPs
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP serve part: no python3"
  exit 0
fi
PYTHONPATH="$SRC/tests/serve" python3 - "$CLI" "$T" "$SERVE_SECONDS" "$REQ" <<'EOF' || fail "serve part"
import json, os, signal, sys, time
import serve_common as sc

cli, tdir, seconds, req = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
refs = [json.load(open(os.path.join(tdir, f)))["answers"] for f in ("ans-a.json", "ans-b.json")]
body = open(req, "rb").read()

class Args:
    pass

args = Args()
args.cli, args.work_dir = cli, tdir
# The first load may meet the writer too (then the server refuses to start): try again.
srv, why = None, ""
for attempt in range(40):
    try:
        srv = sc.Server(args, [], models=[os.path.join(tdir, "served.gguf")])
        break
    except RuntimeError as ex:
        why = str(ex)
        if "no HTTP server" in why:
            print("SKIP serve part: this build has no HTTP server")
            sys.exit(0)
        if "signal" in why or "exited (-" in why:
            print(f"serve died while loading: {why[-2000:]}")
            sys.exit(1)
        time.sleep(0.05)
if srv is None:
    print(f"serve never loaded the file being rewritten (40 attempts): {why[-1000:]}")
    sys.exit(1)

def dead():
    if srv.proc.poll() is None:
        return False
    print(f"server died ({srv.proc.returncode}):\n{srv.text()[-2000:]}")
    return True

counts = [0, 0]
n = hups = 0
end = time.time() + seconds
last_hup = 0.0
conn = srv.conn()
while time.time() < end:
    if time.time() - last_hup > 0.1:
        os.kill(srv.proc.pid, signal.SIGHUP)
        hups += 1
        last_hup = time.time()
    try:
        st, _, data = sc.request(conn, "POST", "/v1/systemone", body)
    except OSError as ex:
        if dead():
            sys.exit(1)
        print(f"request {n + 1}: {ex!r}")
        sys.exit(1)
    n += 1
    if st != 200:
        print(f"request {n}: status {st}: {data[:300]!r}")
        sys.exit(1)
    got = json.loads(data)["answers"]
    if got == refs[0]:
        counts[0] += 1
    elif got == refs[1]:
        counts[1] += 1
    else:
        print(f"request {n}: an answer from neither model: {data[:400]!r}")
        sys.exit(1)
conn.close()
time.sleep(0.3)  # the last reload
if dead():
    sys.exit(1)
rc = srv.stop()
log = srv.text()
if rc != 0:
    print(f"server exited {rc} on SIGTERM:\n{log[-2000:]}")
    sys.exit(1)
print(f"serve: {n} requests ({counts[0]} answered as model a, {counts[1]} as model b), "
      f"{hups} SIGHUPs, {log.count('cannot reload')} torn reloads logged (old model kept), "
      f"{log.count('reloaded, 0 kept')} reloads that took the file")
EOF
echo "PASS"
