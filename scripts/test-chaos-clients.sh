#!/usr/bin/env bash
# The chaos suite (vitest's chaos project) once per member client library: every scenario's
# Redlocks made from that library's clients (test/chaos/clients.ts reads QUORUMLOCK_CHAOS_CLIENT).
# One library at a time, each run named before it starts and timed after it ends; every library
# runs even when an earlier one failed, and the exit status is 1 if any failed.
#
#   npm run test:chaos:clients                 # ioredis iovalkey node-redis node-redis5 glide
#   npm run test:chaos:clients -- glide        # only the libraries named
#   npm run test:chaos:clients -- glide -- -t kill-restart   # after --: passed on to vitest
set -uo pipefail
cd "$(dirname "$0")/.."

libraries=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  libraries+=("$1")
  shift
done
[ "${1:-}" = "--" ] && shift
[ ${#libraries[@]} -eq 0 ] && libraries=(ioredis iovalkey node-redis node-redis5 glide)

summary=()
failed=0
for library in "${libraries[@]}"; do
  echo
  echo "=== test:chaos:clients: QUORUMLOCK_CHAOS_CLIENT=$library ==="
  start=$SECONDS
  if QUORUMLOCK_TEST_WORKERS=2 QUORUMLOCK_CHAOS_CLIENT="$library" npx vitest run --project chaos "$@"; then
    verdict=passed
  else
    verdict=FAILED
    failed=1
  fi
  summary+=("$(printf '%-12s %-7s %4d s' "$library" "$verdict" $((SECONDS - start)))")
  echo "=== test:chaos:clients: $library $verdict in $((SECONDS - start)) s ==="
done

echo
echo "test:chaos:clients:"
printf '  %s\n' "${summary[@]}"
exit $failed
