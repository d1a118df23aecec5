#!/usr/bin/env bash
# Runs clang-tidy (the checks of .clang-tidy) on the C++ sources changed since
# BASE (a changed Foo.h brings its Foo.cpp), with build/default's
# compile_commands.json, and prints a tally of the findings per check.
# Only the product's folders are checked (as scripts/function-sizes.sh: not
# tests/, bench/, examples/); findings in generated files under build/
# (Verilator's headers) are not ours and are dropped. Exit status 1 when there
# is a finding, 0 when there is none (so an unchanged tree passes).
#   scripts/clang-tidy-changed.sh BASE        files changed since the commit BASE
#   scripts/clang-tidy-changed.sh --all       every product source in the compile database
# Environment: EMBER_TIDY_JOBS (default 1: the machine is shared),
#              EMBER_TIDY_BUILD (default build/default), CLANG_TIDY (default clang-tidy-16).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: scripts/clang-tidy-changed.sh BASE|--all" >&2; exit 2; }
build=${EMBER_TIDY_BUILD:-build/default}
jobs=${EMBER_TIDY_JOBS:-1}
tidy=${CLANG_TIDY:-clang-tidy-16}
command -v "$tidy" >/dev/null || { echo "clang-tidy-changed: $tidy not found (Debian: apt install clang-tidy-16)" >&2; exit 2; }
[ -f "$build/compile_commands.json" ] || { echo "clang-tidy-changed: no $build/compile_commands.json (configure first)" >&2; exit 2; }

# The sources the compile database knows, relative to the repository.
root=$(pwd)
known=$(sed -n 's/^ *"file": "\(.*\)",\{0,1\}$/\1/p' "$build/compile_commands.json" | sed "s#^$root/##" | sort -u)
if [ "$1" = "--all" ]; then
  candidates=$known
else
  git rev-parse --verify -q "$1^{commit}" >/dev/null || { echo "clang-tidy-changed: no commit '$1'" >&2; exit 2; }
  changed=$(git diff --name-only --diff-filter=ACMR "$1" -- '*.cpp' '*.cc' '*.h')
  candidates=$(echo "$changed" | sed -E 's/\.h$/.cpp/' | sort -u)
fi
product='^(core|backends|simulator|sdk|python|multichip|rtl)/'
files=$(comm -12 <(echo "$known") <(echo "$candidates") | grep -E "$product" || true)
if [ -z "$files" ]; then
  echo "clang-tidy-changed: no C++ sources to check"
  exit 0
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "$files" | xargs -P "$jobs" -n 1 "$tidy" -p "$build" --quiet 2>/dev/null >"$log" || true
# One finding per "file:line:col: warning: ... [check]" line; a header reached
# from several sources is reported once.
findings=$(grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error): .*\[[a-z0-9.,-]+\]$' "$log" | sed "s#^$root/##" | grep -v '^build/' | sort -u || true)
if [ -z "$findings" ]; then
  echo "clang-tidy-changed: $(echo "$files" | wc -l) file(s), no findings"
  exit 0
fi
echo "$findings"
echo "--- findings per check:"
echo "$findings" | sed -E 's/.*\[([a-z0-9.,-]+)\]$/\1/' | sort | uniq -c | sort -rn
echo "clang-tidy-changed: $(echo "$findings" | wc -l) finding(s) in $(echo "$files" | wc -l) file(s)"
exit 1
