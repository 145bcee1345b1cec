# SPDX-License-Identifier: Apache-2.0
# The words the help texts promise (sourced by man_pages_test.sh and completion_test.sh):
# each function reads a help text on stdin and prints its words one a line, sorted, once each.

# Flags: --long-name and -x, as the text writes them (a group such as --tls-* is not a flag).
help_flags() {
  perl -ne 'while (/(?<![A-Za-z0-9_-])(--[a-z0-9]+(?:-[a-z0-9]+)*|-[A-Za-z])(?![A-Za-z0-9_*-])/g) {
      print "$1\n"
    }' |
    sort -u
}

# Exit codes: the rows of an "Exit codes:" table, and the codes sentences name ("Exits 0 when
# ..., 1 when ...", "exits 80", "fails with 69", "at once (75)", "127 without edgelock-sim").
help_exit_codes() {
  perl -ne '
    $table = 1 if /^Exit codes:/;
    $table = 0 if /^\S/ && !/^Exit codes:/;
    print "$1\n" if $table && /^  ([0-9]+(?:\.\.[0-9]+)?) /;
    while (/\b(?:[Ee]xits?|fails with) ([0-9]+)\b/g) { print "$1\n" }
    while (/\b([0-9]+) (?:when|without)\b/g) { print "$1\n" }
    while (/(?<![A-Za-z0-9_])\(([0-9]+)\)/g) { print "$1\n" }' |
    sort -u
}

# Environment variables: EDGELOCK_*.
help_variables() {
  perl -ne 'while (/\b(EDGELOCK_[A-Z0-9_]*[A-Z0-9])\b/g) { print "$1\n" }' | sort -u
}

# Commands: the first word after the program's name on the usage lines ("  edgelock run ...").
# $1: the program's name.
help_commands() {
  perl -ne 'print "$1\n" if /^  \Q'"$1"'\E ([a-z]+)\b/' | sort -u
}
