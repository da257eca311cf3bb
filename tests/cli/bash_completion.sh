#!/usr/bin/env bash
# The bash completion (packaging/bash-completion/skycmd) offers exactly the commands that
# `skycmd --help` lists and, for each command, exactly the long options its --help
# defines (the option lines of the help text); and completing a few command lines gives
# the expected words.
# Usage: bash_completion.sh <cli> <source_dir> <binary_dir>
set -u
CLI=$1
SRC=$2
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=/dev/null
source "$SRC/packaging/bash-completion/skycmd" || fail "the completion does not load"

# complete LINE: the words the completion offers for the last word of LINE
complete_line() {
    read -r -a COMP_WORDS <<< "$1"
    [[ $1 == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _skycmd
    printf '%s\n' "${COMPREPLY[@]}" | sort
}

cmds=$("$CLI" --help | awk '/^commands:/{on=1; next} on && /^$/{on=0} on && /^  [a-z]/{print $1}')
[ -n "$cmds" ] || fail "no command list in '$CLI --help'"
want=$(printf '%s\n' $cmds help --version --help | sort)
got=$(complete_line "skycmd ")
[ "$want" = "$got" ] || fail "top level: completion offers [$got], --help lists [$want]"

for cmd in $cmds; do
    # the long options on the option lines of the help (indentation, then '-x, --long'
    # or '--long'; a line may name a second one, as convert's '--seed N ... --massive N')
    help_opts=$("$CLI" "$cmd" --help | grep -E '^ +(-[a-zA-Z], )?--[a-z]' |
                grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
    [ -n "$help_opts" ] || fail "$cmd: no options found in its --help"
    comp_opts=$(complete_line "skycmd $cmd --")
    [ "$help_opts" = "$comp_opts" ] ||
        fail "$cmd: completion offers [$(echo $comp_opts)], --help defines [$(echo $help_opts)]"
done

[ "$(complete_line "skycmd dec")" = decide ] || fail "skycmd dec -> decide"
[ "$(complete_line "skycmd quantize in.gguf --ty")" = --type ] || fail "--ty -> --type"
[ "$(complete_line "skycmd quantize in.gguf --type q")" = q8_0 ] || fail "--type q -> q8_0"
[ "$(complete_line "skycmd random s1-pi")" = "$(printf 's1-pico\ns1-pico-xt')" ] ||
    fail "random s1-pi -> s1-pico, s1-pico-xt"
[ "$(complete_line "skycmd serve --log-format j")" = json ] || fail "--log-format j -> json"
[ "$(complete_line "skycmd help ser")" = serve ] || fail "help ser -> serve"
echo "bash completion: $(echo $cmds | wc -w) commands, options agree with --help"
