#!/usr/bin/env bash
# check.sh CLI MANDIR - the man pages match the program:
#   - skycmd.1 exists and there is a skycmd-<cmd>.1 for every command `skycmd --help` lists
#     (and no page for a command that is gone);
#   - every page renders with groff without warnings (when groff is installed);
#   - options a command's --help shows but its page does not mention are reported
#     (a warning, not a failure: pages are written by hand as commands grow).
set -uo pipefail
cli=$1
dir=$2
rc=0
[ -f "$dir/skycmd.1" ] || { echo "missing $dir/skycmd.1"; rc=1; }
cmds=$("$cli" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1}')
[ -n "$cmds" ] || { echo "could not read the command list from '$cli --help'"; exit 1; }
for c in $cmds; do
  page=$dir/skycmd-$c.1
  if [ ! -f "$page" ]; then echo "missing man page for '$c': $page"; rc=1; continue; fi
  grep -q "^\.TH SKYCMD\\\\-$(echo "$c" | tr a-z A-Z) 1" "$page" || { echo "$page: bad .TH line"; rc=1; }
  grep -q "skycmd\\\\-$c (1)\|skycmd\\\\-$c\b" "$dir/skycmd.1" || { echo "skycmd.1 does not mention $c"; rc=1; }
  # options in --help missing from the page (the page escapes '-' as '\-')
  for opt in $("$cli" "$c" --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
    esc=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
    grep -q -- "$esc" "$page" || echo "warning: skycmd-$c.1 does not mention $opt"
  done
done
for page in "$dir"/skycmd-*.1; do
  c=$(basename "$page" .1); c=${c#skycmd-}
  echo "$cmds" | grep -qx "$c" || { echo "$page documents '$c', which skycmd --help does not list"; rc=1; }
done
if command -v groff >/dev/null; then
  for page in "$dir"/*.1; do
    out=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
    if [ -n "$out" ]; then echo "$page: groff warnings:"; echo "$out"; rc=1; fi
  done
fi
[ $rc = 0 ] && echo "man pages: $(ls "$dir"/*.1 | wc -l) pages for skycmd and its $(echo "$cmds" | wc -l) commands"
exit $rc
