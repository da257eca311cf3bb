#!/bin/sh
# check_layers.sh SOURCE_DIR [--graph] - the layering rule of CONTRIBUTING.md ("Layers"),
# checked on the #include "..." lines of SOURCE_DIR/src (ctest: check_layers).
#
# A module is a directory under src/. The modules stand in one order (LAYERS below, also
# written in CONTRIBUTING.md, which must say the same); a file may include its own module's
# files, any module below its own, and the public header (include/skycmd.h). It fails,
# naming file:line, on
#   - an include that climbs the order (a module including one above it),
#   - a program (cli, serve) including library internals: programs use include/skycmd.h,
#     their own files, the programs below them, and src/util/platform.h at most,
#   - an include that resolves to no file, or a module that is not in the order,
#   - a circle of includes between files (a.h -> b.h -> a.h).
# Includes resolve as the compiler finds them: relative to the including file, then in
# include/ and src/, then (the programs' -I of each other's directories) in src/<module>/.
# --graph prints the module graph (edges with their include counts) instead of checking.
# Needs only sh, find, sed, sort and awk (no Python).
set -u
root=${1:?usage: check_layers.sh SOURCE_DIR [--graph]}
mode=${2:-check}
cd "$root" || exit 2

LAYERS="util numeric kernels gguf safetensors quant tokenizer prompt model convert decide engine api serve cli"
PROGRAMS="serve cli"

# CONTRIBUTING.md states the same order (one line: "util < numeric < ... < cli").
if [ "$mode" = check ]; then
    want=$(echo "$LAYERS" | sed 's/ / < /g')
    if ! grep -qF "$want" CONTRIBUTING.md 2>/dev/null; then
        echo "check_layers: CONTRIBUTING.md does not state the order of tests/check_layers.sh:"
        echo "    $want"
        exit 1
    fi
fi

# file:line:target of every #include "..." (comments after it allowed)
out=$(find src -type f \( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort | while read -r f; do
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p;t;s/.*//p' "$f" |
        awk -v f="$f" 'NF { print f ":" NR ":" $0 }'
done | while IFS=: read -r f line inc; do
    # resolve as the compiler would (normalise a/b/../c)
    d=$(dirname "$f")
    to=""
    for cand in "$d/$inc" "include/$inc" "src/$inc"; do
        if [ -f "$cand" ]; then to=$cand; break; fi
    done
    if [ -z "$to" ]; then
        for cand in src/*/"$inc"; do
            if [ -f "$cand" ]; then to=$cand; break; fi
        done
    fi
    if [ -n "$to" ]; then
        to=$(echo "$to" | awk -F/ '{ n = 0; for (i = 1; i <= NF; i++) { if ($i == "." || $i == "") continue;
               if ($i == ".." && n > 0 && s[n] != "..") { n--; continue } s[++n] = $i }
               o = s[1]; for (i = 2; i <= n; i++) o = o "/" s[i]; print o }')
    fi
    echo "$f:$line:$inc:${to:-?}"
done | awk -F: -v layers="$LAYERS" -v programs="$PROGRAMS" -v mode="$mode" '
function module(p,   a) { if (p !~ /^src\//) return ""; split(p, a, "/"); return a[2] }
BEGIN {
    n = split(layers, L, " "); for (i = 1; i <= n; i++) rank[L[i]] = i
    split(programs, P, " "); for (i in P) prog[P[i]] = 1
    bad = 0
}
{
    f = $1; line = $2; inc = $3; to = $4
    fm = module(f)
    if (!(fm in rank) && !(fm in unknown)) {
        unknown[fm] = 1; bad++
        printf "src/%s: module \"%s\" is not in the layer order (tests/check_layers.sh LAYERS, CONTRIBUTING.md)\n", fm, fm
    }
    if (to == "?") { bad++; printf "%s:%s: #include \"%s\" resolves to no file\n", f, line, inc; next }
    nodes[f] = 1
    if (to ~ /^src\//) { edge[f, ++ne[f]] = to; where[f, to] = line }
    tm = module(to)
    if (tm == "" || tm == fm) next
    cnt[fm " -> " tm]++
    if (!(tm in rank)) next
    if (fm in prog) {
        if (to == "src/util/platform.h" || ((tm in prog) && rank[tm] < rank[fm])) next
        bad++
        printf "%s:%s: #include \"%s\": a program (%s) includes library internals (%s); use include/skycmd.h\n", f, line, inc, fm, to
        next
    }
    if (rank[tm] > rank[fm]) {
        bad++; climb[fm " -> " tm] = 1
        printf "%s:%s: #include \"%s\" climbs the layers: %s (layer %d) may not include %s (layer %d)\n", f, line, inc, fm, rank[fm], tm, rank[tm]
    }
}
function dfs(u,   k, v) {
    state[u] = 1; stack[++sp] = u
    for (k = 1; k <= ne[u]; k++) {
        v = edge[u, k]
        if (state[v] == 1) {
            s = ""; for (j = sp; j >= 1; j--) { s = stack[j] " -> " s; if (stack[j] == v) break }
            printf "%s:%s: #include circle: %s%s\n", u, where[u, v], s, v; bad++
        } else if (state[v] == 0) dfs(v)
    }
    sp--; state[u] = 2
}
END {
    if (mode == "--graph") {
        for (e in cnt) printf "%s (%d)%s\n", e, cnt[e], (e in climb) ? "  CLIMBS" : ""
        exit 0
    }
    for (u in nodes) if (state[u] == 0) dfs(u)
    if (bad) { printf "check_layers: %d violation(s); the rule is in CONTRIBUTING.md (Layers)\n", bad; exit 1 }
    print "check_layers: every include of src/ keeps to the layers (" layers ")"
}')
rc=$?  # awk's: the last command of the pipeline
if [ "$mode" = --graph ]; then printf '%s\n' "$out" | grep -v '^src/\|^check_layers' | LC_ALL=C sort; else printf '%s\n' "$out"; fi
exit $rc
