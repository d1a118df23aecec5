#!/usr/bin/env bash
# Lists every function longer than a limit (default 100 lines) in the product's
# C++ sources, largest first: "lines  file:line  name". Tests, benchmarks,
# examples and generated files (build/) are left out; lambdas count as part of
# the function that holds them. Needs Universal Ctags (Debian: universal-ctags).
#   scripts/function-sizes.sh [LIMIT] [PATH...]
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${1:-100}
shift || true
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(core backends simulator sdk python multichip rtl)
command -v ctags >/dev/null || { echo "function-sizes: ctags (universal-ctags) not found" >&2; exit 1; }
git ls-files -- "${paths[@]}" | grep -E '\.(cpp|cc|h|hpp)$' | grep -vE '(^|/)(tests?|bench|examples)/' |
  ctags -L - -o - --languages=C++ --kinds-C++=f --fields=+neK 2>/dev/null |
  awk -F'\t' -v limit="$limit" '
    $1 ~ /^__anon/ { next }  # lambdas: part of their enclosing function
    {
      line = ""; end = ""; scope = ""
      for (i = 4; i <= NF; i++) {
        if ($i ~ /^line:/) line = substr($i, 6)
        else if ($i ~ /^end:/) end = substr($i, 5)
        else if ($i ~ /^(class|struct|namespace):/) { scope = $i; sub(/^[a-z]+:/, "", scope); sub(/^.*::/, "", scope) }
      }
      if (line == "" || end == "") next
      size = end - line + 1
      name = (scope != "" && scope !~ /^__anon/) ? scope "::" $1 : $1
      if (size > limit) printf "%5d  %s:%s  %s\n", size, $2, line, name
    }' | sort -rn -k1,1
