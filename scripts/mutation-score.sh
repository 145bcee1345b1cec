#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The simulator's power, measured: applies each mutant of scripts/mutants.txt (a small,
# plausible bug in core/ or session/) to a copy of the tree, rebuilds, and asks whether the
# simulator alone notices it:
#   1. `edgelock-sim matrix` (the same seed as the baseline): any cell whose verdict differs
#      from the unmutated tree's, a crash (an assertion), or anomalies kill the mutant;
#   2. otherwise `ctest -L sim` (scenario, determinism and property tests) must fail.
# Step 1 is staged, for speed and with the same verdicts: a short matrix (--quick-runs, 5
# runs per cell) first, whose kills are exactly kills of the full one (see quick_matrix_kill);
# only a mutant it does not kill runs the full matrix (--runs) and then ctest. Each matrix is
# compared with the baseline cell by cell as it prints and stops at the first cell that
# kills the mutant (first_changed_cell).
# A mutant whose catalogue block names a `first-test` (one of `ctest -L sim`'s, known to kill
# it where the matrix does not) runs that test alone first: when it fails, that is step 2's
# verdict without the matrices (13 to 15 s each); when it passes, the steps run as above.
# One whose block names a `first-cell` (a cell of the matrix, "S6 sentinel+WAIT+guard", known
# to kill it late in the full matrix) runs that cell alone when the short matrix has not
# killed it, with the full matrix's runs and seed: its runs are the full matrix's runs of that
# cell (first_cell_kill), so a kill there is a kill of the full matrix; when it does not
# kill, the full matrix runs as above.
# Each mutant builds only what its verdict needs: the simulator, then the simulator's tests
# only when the matrix did not kill it. With --core-tests, the core's and session's own unit
# tests (lock_test, lock_fair_test, lock_model_test, restart_guard_test, node_facts_test,
# lock_traffic_test, lock_links_test) are built and run too, and reported separately: the
# score counts the simulator alone.
#
# With --share K/M, only a share of the catalogue runs: the mutants whose place in it (0, 1,
# ...) is K modulo M, and with --changed-since REV also every mutant of a file changed since
# REV (in the working tree); every mutant when the judge itself changed since REV (sim/,
# tests/sim/ or the catalogue), as a change there may spare any of them. ./scripts/test.sh
# runs a share (a third, turning with each commit); without --share every mutant runs.
#
#   scripts/mutation-score.sh [--runs N] [--quick-runs N] [--jobs N] [--only NAME[,NAME...]]
#                             [--core-tests] [--share K/M [--changed-since REV]]
#
# Prints one line per mutant and last `mutants killed K/N`; exits 1 when any survived.
# Works in build-mutants/ (a copy of the working tree and its build), never in the tree.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
catalogue="$root/scripts/mutants.txt"
work="$root/build-mutants"
runs=50
# 0, or not below --runs: no short matrix. 5 runs (1.2 s against the full matrix's 13 s) kill
# 39 of the 57 mutants; 10 (2.6 s) kill one more.
quick_runs=5
jobs=$(nproc)
only=""
core_tests=false
share=""
changed_since=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --quick-runs) quick_runs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --core-tests) core_tests=true; shift ;;
    --share) share=$2; shift 2 ;;
    --changed-since) changed_since=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--quick-runs N] [--jobs N] [--only NAME[,NAME...]]" \
      "[--core-tests] [--share K/M [--changed-since REV]]" >&2; exit 2 ;;
  esac
done
if [ -n "$share" ] && ! [[ "$share" =~ ^([0-9]+)/([1-9][0-9]*)$ ]]; then
  echo "--share wants K/M, as 1/3: $share" >&2
  exit 2
fi

src="$work/src"
# The build directory sits in the copy as build/ sits in the tree, and ccache rewrites paths
# relative to the copy: the unmutated sources then compile to the cache entries build/ made.
build="$src/build"
export CCACHE_BASEDIR="$src"
# Linking the test programs costs more than the simulator's rebuild: built when needed.
sim_targets=(edgelock-sim)
sim_test_targets=(sim_test sim_property_test)
core_test_targets=(lock_test lock_fair_test lock_model_test restart_guard_test node_facts_test
  lock_traffic_test lock_links_test)
targets=("${sim_targets[@]}" "${sim_test_targets[@]}")
if [ "$core_tests" = true ]; then targets+=("${core_test_targets[@]}"); fi
command_timeout=600  # a mutant that loops forever is killed by this, as a hang

copy_tree() {
  mkdir -p "$src"
  (cd "$root" && git ls-files -co --exclude-standard -z | grep -zv '^build' |
    tar --null -T - -cf -) | (cd "$src" && tar -m -xf -)  # -m: fresh mtimes, so all rebuilds
}

build_targets() {
  local wanted=("$@")
  [ ${#wanted[@]} -eq 0 ] && wanted=("${targets[@]}")
  cmake --build "$build" -j "$jobs" --target "${wanted[@]}" >"$work/build.log" 2>&1
}

# The verdict columns of the matrix lines on standard input: "S1 single overlap=... oracle=..."
# per cell.
verdict_columns() {
  awk '/^S[0-9]+ / {
    line = $1 " " $2
    for (i = 3; i <= NF; i++) if ($i ~ /=(ok|VIOLATED)$/) line = line " " $i
    print line
  }'
}

# The baseline: the unmutated matrix's verdict columns, in $work/baseline.txt.
record_baseline() {
  timeout "$command_timeout" "$build/sim/edgelock-sim" matrix --runs "$runs" --seed 1 \
    --jobs "$jobs" >"$work/matrix.txt" 2>&1 || return 1
  ! grep -q '^anomalies=' "$work/matrix.txt" || return 1
  verdict_columns <"$work/matrix.txt" >"$work/baseline.txt"
}

# Reads a mutant's matrix as the simulator prints it and compares each cell with the
# baseline's (file $2, the same cells in the same order: the matrix prints its cells in the
# baseline's order whatever --jobs is) as it arrives. At the first cell with a check that
# differs (mode `changed`), or that is violated where the baseline holds it (mode `new`),
# prints that cell's checks, as "S1 single oracle=VIOLATED, S1 single overlap=VIOLATED", and
# stops reading: the simulator then dies of SIGPIPE and the rest of the matrix is not
# computed. Every line read is kept in $work/matrix.txt.
first_changed_cell() {
  awk -v mode="$1" -v base="$2" -v out="$work/matrix.txt" '
    { print > out }
    /^S[0-9]+ / {
      line = $1 " " $2
      for (i = 3; i <= NF; i++) if ($i ~ /=(ok|VIOLATED)$/) line = line " " $i
      if ((getline before < base) <= 0) next
      n = split(before, was, " "); split(line, now, " ")
      found = ""
      for (i = 3; i <= n; i++) {
        if (was[i] == now[i]) continue
        if (mode == "new" && !(was[i] ~ /=ok$/ && now[i] ~ /=VIOLATED$/)) continue
        found = found (found == "" ? "" : ", ") was[1] " " was[2] " " now[i]
      }
      if (found != "") { print found; exit }
    }'
}

# Why a matrix of $1 runs per cell kills the mutant, or nothing: the first cell $2 (mode of
# first_changed_cell) finds against the baseline, or else a failed run (a crash, a hang,
# anomalies). $3, when given, is the baseline's file (default: the whole matrix's), and the
# arguments after it choose the matrix's cells (--scenario S --config NAME).
matrix_kill() {
  local runs=$1 mode=$2 base=${3:-$work/baseline.txt} cells status
  shift $(($# < 3 ? $# : 3))
  : >"$work/matrix.txt"
  cells=$(timeout "$command_timeout" "$build/sim/edgelock-sim" matrix --runs "$runs" --seed 1 \
    --jobs "$jobs" "$@" 2>&1 | first_changed_cell "$mode" "$base"; exit "${PIPESTATUS[0]}") &&
    status=0 || status=$?
  if [ -n "$cells" ]; then
    echo "killed by matrix: $cells"
  elif [ "$status" != 0 ] || grep -q '^anomalies=' "$work/matrix.txt"; then
    echo "killed by the matrix run ($(grep -m1 -E 'anomalies|Assertion|assert|event limit' \
      "$work/matrix.txt" || echo 'it failed'))"
  fi
  return 0
}

# The short matrix's verdict, or nothing: its kills are the full matrix's, so no mutant is
# judged on other evidence. Run k of a cell has the same seed whatever --runs is
# (sim/src/matrix.cpp: cell_seed of the cell and k), so the short matrix runs the first
# quick_runs + 1 runs of each cell of the full one, and the program is deterministic. A crash
# or a hang in them is one of the full matrix; their anomalies are among its anomalies; and a
# check they violate where the full baseline holds is violated in the full matrix too (a
# cell's check is VIOLATED when any of its runs violates it) while the baseline holds it: a
# changed cell. Not the reverse: a cell the short runs find held, or one the short baseline
# finds held but the full one violated, may still change in the remaining runs, which the
# full matrix then decides as before.
quick_matrix_kill() {
  if [ "$quick_runs" -gt 0 ] && [ "$quick_runs" -lt "$runs" ]; then
    matrix_kill "$quick_runs" new
  fi
  return 0
}

# The cell $first_cell alone, at the full matrix's runs and seed, against its baseline line.
# Run k of a cell has the same seed whatever else the matrix runs (sim/src/matrix.cpp:
# cell_seed of the scenario, the configuration's place in the table and k), so these are the
# full matrix's runs of that cell, and the program is deterministic: a verdict that differs
# from the baseline's, a crash, a hang or anomalies in them are the full matrix's too.
first_cell_kill() {
  grep -m1 "^$first_cell " "$work/baseline.txt" >"$work/first-cell.txt"
  matrix_kill "$runs" changed "$work/first-cell.txt" --scenario "${first_cell%% *}" \
    --config "${first_cell#* }"
}

core_tests_catch() {
  local t
  for t in tests/core/lock_test tests/core/lock_fair_test tests/core/lock_model_test \
    tests/core/restart_guard_test tests/session/node_facts_test tests/session/lock_traffic_test \
    tests/session/lock_links_test; do
    # A test a mutant makes abort is reported by the shell that waits for it: in a subshell
    # that does not exec it (the `exit`), whose report goes nowhere.
    (timeout "$command_timeout" "$build/$t" >/dev/null 2>&1; exit $?) 2>/dev/null || return 0
  done
  return 1
}

# Builds the mutated copy's targets $@; a mutant that does not compile ends the score (the
# catalogue no longer matches the code).
build_mutant() {
  if ! build_targets "$@"; then
    echo "mutant $name does not compile:" >&2
    tail -20 "$work/build.log" >&2
    exit 1
  fi
}

# The simulator's own tests, built for the mutant only when the matrix did not kill it. Run
# in two parts that are together `ctest -L sim`: the slow ones (the property tests and the
# jobs comparisons, 20 s of its 27) only when the others pass, so a mutant a scenario test
# catches does not wait for them, nor for the property tests' build (sim_property_test holds
# only sim_properties.*: a mutated header recompiles its RapidCheck-heavy file).
# $work/ctest.txt is the failing part's output.
slow_sim_tests='^(sim_properties|parallel)\.'
sim_tests_pass() {
  build_mutant sim_test
  (cd "$build" && timeout "$command_timeout" ctest -L sim -E "$slow_sim_tests" -j "$jobs" \
    >"$work/ctest.txt" 2>&1) || return 1
  build_mutant sim_property_test
  (cd "$build" && timeout "$command_timeout" ctest -L sim -R "$slow_sim_tests" -j "$jobs" \
    >"$work/ctest.txt" 2>&1) || return 1
}

# Whether the scenario test $first_test passes; only sim_test is built for it. A name no
# test has ends the score (the catalogue no longer matches the tests).
first_test_passes() {
  build_mutant sim_test
  if ! (cd "$build" && ctest -N -R "^${first_test}\$" | grep -q '^Total Tests: 1$'); then
    echo "mutant $name: no test $first_test" >&2
    exit 1
  fi
  (cd "$build" && timeout "$command_timeout" ctest -R "^${first_test}\$" >"$work/ctest.txt" 2>&1)
}

# Applies mutant $1's replacements to the copy; fails when a fragment is not found exactly
# once (the catalogue no longer matches the code).
apply_mutant() {
  local file=$1; shift
  local content from to count
  content=$(<"$src/$file")
  while [ $# -gt 0 ]; do
    from=$1 to=$2; shift 2
    count=$(grep -cF -- "$from" "$src/$file" || true)
    if [ "$count" != 1 ]; then
      echo "fragment found $count times in $file: $from" >&2
      return 1
    fi
    content=${content/"$from"/"$to"}
  done
  printf '%s\n' "$content" >"$src/$file"
}

echo "== mutation score: copying the tree to $work, building ${targets[*]}"
rm -rf "$src"
copy_tree
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEDGELOCK_BUILD_EXAMPLES=OFF \
  >"$work/configure.log" 2>&1
build_targets || { cat "$work/build.log"; exit 1; }
record_baseline || {
  echo "the unmutated matrix failed" >&2
  cat "$work/matrix.txt"
  exit 1
}
if [ "$core_tests" = true ] && core_tests_catch; then
  echo "the unmutated core tests fail" >&2
  exit 1
fi
echo "baseline: matrix --runs $runs --seed 1, $(wc -l <"$work/baseline.txt") cells"

# The share's selection (--share, --changed-since): the files changed since REV, and whether
# the judge is among them (then every mutant runs).
changed_files=""
judge_changed=false
if [ -n "$share" ] && [ -n "$changed_since" ]; then
  changed_files=$(git -C "$root" diff --name-only "$changed_since" --) || {
    echo "--changed-since: no revision $changed_since" >&2
    exit 2
  }
  if grep -qE '^(sim/|tests/sim/|scripts/mutants\.txt$)' <<<"$changed_files"; then
    judge_changed=true
    echo "the simulator or the catalogue changed since $changed_since: every mutant runs"
  fi
fi

# Whether the mutant at catalogue place $1 (of file $file) is in the share.
in_share() {
  [ -z "$share" ] && return 0
  [ "$judge_changed" = true ] && return 0
  [ $(($1 % ${share#*/})) -eq "${share%/*}" ] && return 0
  [ -n "$changed_files" ] && grep -qxF -- "$file" <<<"$changed_files"
}

total=0
killed=0
core_caught=0
place=-1
name="" what="" file="" first_test="" first_cell="" pairs=()

run_mutant() {
  [ -z "$name" ] && return 0
  place=$((place + 1))
  if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then return 0; fi
  in_share "$place" || return 0
  total=$((total + 1))
  local began=$SECONDS
  cp "$root/$file" "$src/$file"
  apply_mutant "$file" "${pairs[@]}" || exit 1
  local verdict="" core=""
  if [ -n "$first_cell" ] && ! grep -q "^$first_cell " "$work/baseline.txt"; then
    echo "mutant $name: no cell $first_cell in the matrix" >&2
    exit 1
  fi
  if [ -n "$first_test" ] && ! first_test_passes; then
    verdict="killed by ctest -L sim: $first_test"
  else
    build_mutant "${sim_targets[@]}"
    verdict=$(quick_matrix_kill)
    [ -z "$verdict" ] && [ -n "$first_cell" ] && verdict=$(first_cell_kill)
    [ -z "$verdict" ] && verdict=$(matrix_kill "$runs" changed)
  fi
  if [ -z "$verdict" ]; then
    if ! sim_tests_pass; then
      local failed
      failed=$(grep -E '^\s+[0-9]+ - ' "$work/ctest.txt" | head -2 |
        sed 's/^[[:space:]]*[0-9]* - //; s/ (.*//' | paste -sd ',' | sed 's/,/, /g')
      verdict="killed by ctest -L sim: $failed"
    else
      verdict="SURVIVED"
    fi
  fi
  [ "$verdict" != "SURVIVED" ] && killed=$((killed + 1))
  if [ "$core_tests" = true ]; then
    build_mutant "${core_test_targets[@]}"
    core=" | core unit tests: missed"
    if core_tests_catch; then
      core=" | core unit tests: caught"
      core_caught=$((core_caught + 1))
    fi
  fi
  printf '%-38s %s%s (%d s)\n' "$name" "$verdict" "$core" $((SECONDS - began))
  cp "$root/$file" "$src/$file"
}

while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in
    '#'*) continue ;;
    '') run_mutant; name="" what="" file="" first_test="" first_cell="" pairs=() ;;
    name:*) name=${line#name: } ;;
    what:*) what=${line#what: } ;;
    file:*) file=${line#file: } ;;
    first-test:*) first_test=${line#first-test: } ;;
    first-cell:*) first_cell=${line#first-cell: } ;;
    from:*) pairs+=("${line#from: }") ;;
    to:*) pairs+=("${line#to: }") ;;
    *) echo "bad catalogue line: $line" >&2; exit 2 ;;
  esac
done <"$catalogue"
run_mutant

build_targets  # leave the copy unmutated
if [ "$core_tests" = true ]; then echo "core unit tests caught $core_caught/$total"; fi
if [ -n "$share" ] && [ "$judge_changed" = false ]; then
  also=""
  [ -n "$changed_since" ] && also=", and the mutants of files changed since $changed_since"
  echo "share $share of the catalogue's $((place + 1)) mutants$also"
fi
echo "mutants killed $killed/$total"
[ "$killed" = "$total" ]
