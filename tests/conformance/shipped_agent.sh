#!/usr/bin/env bash
# Checks that the shipped termbridge-agent holds no conformance fixture: none
# of the fixture tools' names is in its bytes, and it refuses the flag that
# once turned them on. The test-only agent must hold every name, so a name
# list that no longer matches the fixtures fails here instead of passing.
#
#   shipped_agent.sh AGENT_BIN CONFORMANCE_AGENT_BIN FIXTURES_SOURCE
set -euo pipefail
agent=$1 conformance_agent=$2 fixtures=$3
mapfile -t names < <(grep -o '"test_[a-z_]*"' "$fixtures" | tr -d '"' | sort -u)
if ((${#names[@]} < 10)); then
  echo "found only ${#names[@]} fixture tool names in $fixtures" >&2
  exit 1
fi
failed=0
for name in "${names[@]}"; do
  if grep -qaF "$name" "$agent"; then
    echo "the shipped agent contains the fixture tool name $name" >&2
    failed=1
  fi
  if ! grep -qaF "$name" "$conformance_agent"; then
    echo "the conformance agent lacks the fixture tool name $name (is the check still looking?)" >&2
    failed=1
  fi
done
if out=$("$agent" --conformance-fixtures </dev/null 2>&1); then
  echo "the shipped agent accepted --conformance-fixtures" >&2
  failed=1
elif ! grep -q 'conformance_fixtures\|conformance-fixtures' <<<"$out"; then
  echo "the shipped agent failed on --conformance-fixtures without naming the flag: $out" >&2
  failed=1
fi
((failed == 0)) || exit 1
echo "shipped agent: none of ${#names[@]} fixture tools, --conformance-fixtures refused"
