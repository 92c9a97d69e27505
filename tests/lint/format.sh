#!/usr/bin/env bash
# Checks that every C++ source and header is formatted by the repository's
# .clang-format (Google style, 100 columns). Prints the files that differ and
# how to fix them:  clang-format -i <file>...
set -euo pipefail
cd "$(dirname "$0")/../.."
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cc' '*.h')
else
  mapfile -t files < <(find agent broker common tests -name node_modules -prune -o \
    \( -name '*.cc' -o -name '*.h' \) -print)
fi
differ=()
for f in "${files[@]}"; do
  [[ -f $f ]] || continue
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || differ+=("$f")
done
if ((${#differ[@]})); then
  echo "lint.format: ${#differ[@]} of ${#files[@]} files differ from .clang-format:" >&2
  printf '  %s\n' "${differ[@]}" >&2
  echo "fix with: clang-format -i ${differ[*]}" >&2
  exit 1
fi
echo "lint.format: ${#files[@]} files formatted"
