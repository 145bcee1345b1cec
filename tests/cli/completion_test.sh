#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Does the bash completion of edgelock (tools/edgelock/completion/edgelock) complete what the
# help texts list?
#
#   completion_test.sh COMPLETION EDGELOCK EDGELOCK_SIM
#   completion_test.sh COMPLETION EDGELOCK EDGELOCK_SIM --without FLAG
#
# Sources COMPLETION in this bash (without bash-completion's helpers, as on a machine that
# lacks the package), and completes lines as bash would after TAB, setting COMP_WORDS and
# COMP_CWORD and calling the function `complete -p edgelock` names:
#   - examples: `edgelock r` offers run and release only, `edgelock run --o` offers --on-lost,
#     the signal names after --on-lost (and --on-lost=), on|off, files after --tls-ca, only
#     directories after --tls-ca-dir, a command after `run ... --`, then files; the simulator's
#     commands, flags and configurations after `edgelock sim`
#   - against the help texts: `edgelock TAB` offers every command of `edgelock --help`, and
#     `edgelock COMMAND --TAB` --help and every long flag of `edgelock help COMMAND` above its
#     exit codes (the table every command shares), less those of another command it quotes
#     (`edgelock release --token`), and of the overview's sections between its usage and its
#     exit codes (where Redis is, TLS, ...);
#     `edgelock sim C --TAB` every flag of
#     `edgelock-sim --help`'s usage lines for C
# Prints each failure and exits 1, or 0 when every completion held.
#
# --without FLAG: the test shown able to fail. Runs it on a copy of COMPLETION whose flag lists
# lost FLAG, and exits 0 only if it then fails and names FLAG.
set -euo pipefail

(($# == 3 || $# == 5)) || {
  echo "usage: completion_test.sh COMPLETION EDGELOCK EDGELOCK_SIM [--without FLAG]" >&2
  exit 2
}
completion=$1
edgelock=$2
edgelock_sim=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/help_words.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/edgelock-completion-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

if (($# == 5)); then
  [[ "$4" == --without ]] || { echo "completion_test: expected --without, got $4" >&2; exit 2; }
  word=$5
  # Only the lists of flags (lines `name) echo "..."`), not the values' cases.
  WORD=$word perl -pe 's/ \Q$ENV{WORD}\E(?=[ "])//g if /^\s+[a-z]+\) echo "/' \
    "$completion" >"$work/edgelock"
  cmp -s "$completion" "$work/edgelock" && {
    echo "completion_test: no $word in the flag lists" >&2
    exit 2
  }
  set +e
  "$0" "$work/edgelock" "$edgelock" "$edgelock_sim" >"$work/output" 2>&1
  status=$?
  set -e
  cat "$work/output"
  if ((status == 1)) && grep -q -- "missing:.*\(^\| \|:\)$word\( \|$\)" "$work/output"; then
    echo "completion_test: ok: without $word the test fails, and names it"
    exit 0
  fi
  echo "completion_test: FAIL: without $word the test exited $status without naming it" >&2
  exit 1
fi

source "$completion"
function=$(complete -p edgelock | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
[[ -n "$function" ]] || {
  echo "completion_test: FAIL: $completion registers no function for edgelock" >&2
  exit 1
}

# Prints, sorted, what TAB offers at the end of LINE (a trailing space: a new word). Words are
# split as bash splits them (COMP_WORDBREAKS: "=" is a word of its own).
complete_line() {
  local line=$1
  COMP_LINE=$line
  COMP_POINT=${#line}
  read -ra COMP_WORDS <<<"${line//=/ = }"
  [[ "$line" == *" " || "$line" == *"=" ]] && COMP_WORDS+=("")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  "$function" edgelock "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" 2>/dev/null
  ((${#COMPREPLY[@]} == 0)) || printf '%s\n' "${COMPREPLY[@]}" | sort -u
}

failures=0
fail() {
  echo "completion_test: FAIL: $*"
  failures=$((failures + 1))
}
# expect LINE WORD...: TAB after LINE offers exactly WORDs.
expect() {
  local line=$1 offered expected
  shift
  offered=$(complete_line "$line" | paste -sd' ' -)
  expected=$(printf '%s\n' "$@" | sort -u | paste -sd' ' -)
  [[ "$offered" == "$expected" ]] || fail "'$line<TAB>' offers '$offered', not '$expected'"
}
# expect_among LINE WORD...: TAB after LINE offers (at least) WORDs.
expect_among() {
  local line=$1 offered word
  shift
  offered=$(complete_line "$line")
  for word in "$@"; do
    grep -Fxq -- "$word" <<<"$offered" ||
      fail "'$line<TAB>' does not offer $word (offers: $(paste -sd' ' - <<<"$offered"))"
  done
}

# --- examples -------------------------------------------------------------------------------
mkdir -p "$work/files/certs"
touch "$work/files/ca.pem" "$work/files/client.key"
expect "edgelock r" release run
expect "edgelock run --o" --on-lost
expect "edgelock run --name x --on-lost " ALRM HUP INT KILL QUIT TERM USR1 USR2
expect "edgelock run --on-lost=K" KILL
expect "edgelock run --restart-guard o" off on
expect "edgelock status --w"
expect "edgelock check --wait" --wait-replicas --wait-replicas-timeout
expect "edgelock hold --w" --wait --wait-replicas --wait-replicas-timeout
expect "edgelock list --p" --password-file --prefix
expect "edgelock run --password-file $work/files/ca" "$work/files/ca.pem"
expect "edgelock release --to" --token
expect "edgelock run --tls-ca $work/files/c" "$work/files/ca.pem" "$work/files/certs" \
  "$work/files/client.key"
expect "edgelock run --tls-ca-dir $work/files/c" "$work/files/certs"
expect "edgelock run --tls-key=$work/files/cl" "$work/files/client.key"
expect_among "edgelock run --name x --wait 0 -- ba" bash
expect_among "edgelock run --name x ba" bash
expect "edgelock run --name x -- bash $work/files/ca" "$work/files/ca.pem"
expect "edgelock help s" sim status
expect "edgelock sim " --help explore matrix run soak
expect "edgelock sim run --config single+fe" single+fencing single+fencing+fair \
  single+fencing+fair+permits-3 single+fencing+guard single+fencing+guard+fair \
  single+fencing+guard+fair+permits-3 single+fencing+guard+permits-3 single+fencing+permits-3
expect "edgelock sim explore --check o" oracle order overlap
echo "completion_test: examples checked"

# --- against the help texts -----------------------------------------------------------------
"$edgelock" --help >"$work/overview"
mapfile -t commands < <(help_commands edgelock <"$work/overview")
# The flags every command takes: the overview between its usage lines and its exit codes
# (where Redis is, TLS, ...).
common_flags() {
  perl -ne '$usage = 1 if /^usage:/; $past = 1 if $usage && /^$/; exit if /^Exit codes:/;
    print if $past' "$work/overview"
}
# The flags of `edgelock help COMMAND` ($1) itself: the text above its exit codes (the table
# every command shares names flags of run), without what it quotes of another command.
command_flags() {
  "$edgelock" help "$1" | COMMAND=$1 perl -ne '$past = 1 if /^Exit codes:/; next if $past;
    s/\x60edgelock (?!\Q$ENV{COMMAND}\E\b)[a-z]+[^\x60]*\x60//g; print'
}
expect_among "edgelock " "${commands[@]}"
missing=()
for command in "${commands[@]}"; do
  [[ "$command" == help || "$command" == sim ]] && continue
  offered=$(complete_line "edgelock $command --")
  while read -r flag; do
    [[ "$flag" == --* && "$flag" != --version ]] || continue
    grep -Fxq -- "$flag" <<<"$offered" || missing+=("$command:$flag")
  done < <({ echo --help; common_flags; command_flags "$command"; } | help_flags)
done
# The simulator's usage lines: "  edgelock-sim COMMAND flags" and lines that continue them.
"$edgelock_sim" --help >"$work/sim-help"
while read -r command flags; do
  offered=$(complete_line "edgelock sim $command --")
  for flag in $flags; do
    grep -Fxq -- "$flag" <<<"$offered" || missing+=("sim $command:$flag")
  done
done < <(perl -ne '
  if (/^  edgelock-sim ([a-z]+)\b(.*)/) { $c = $1; $usage{$c} .= " $2"; next }
  if (defined $c && /^   +\S/) { $usage{$c} .= " $_"; next }
  undef $c;
  END { for (sort keys %usage) { my %f = map { $_ => 1 } ($usage{$_} =~ /(--[a-z][a-z-]*[a-z])/g);
        print "$_ ", join(" ", sort keys %f), "\n" } }' "$work/sim-help")
((${#missing[@]} == 0)) || fail "flags of the help texts missing: ${missing[*]}"
# Every configuration the simulator's help lists (the matrix's and those run only when named).
offered=$(complete_line "edgelock sim run --config ")
missing=()
for config in $(perl -ne 'print "$1\n" if /^configurations [^:]*: (.*)/' "$work/sim-help"); do
  grep -Fxq -- "$config" <<<"$offered" || missing+=("$config")
done
((${#missing[@]} == 0)) || fail "configurations of edgelock-sim --help missing: ${missing[*]}"

if ((failures > 0)); then
  echo "completion_test: FAIL: tools/edgelock/completion/edgelock does not complete" \
    "what it should (above)" >&2
  exit 1
fi
echo "completion_test: ok: every command and flag of the help texts, and the examples, complete"
