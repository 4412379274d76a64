#!/usr/bin/env bash
# Package hygiene on the real tarball: only what users need is in it, publint finds nothing, and
# the types resolve for every consumer (ESM, CJS, node10, bundlers).
set -euo pipefail
cd "$(dirname "$0")/.."
npm run build >/dev/null
out=$(mktemp -d)
tarball="$out/$(npm pack --silent --pack-destination "$out" | tail -n 1)"
unexpected=$(tar tzf "$tarball" | grep -Ev '^package/(dist/|README\.md$|LICENSE$|package\.json$)' || true)
if [ -n "$unexpected" ]; then echo "check-package: unexpected files in the tarball:"; echo "$unexpected"; exit 1; fi
echo "check-package: $(tar tzf "$tarball" | wc -l) files, $(du -k "$tarball" | cut -f1) KiB"
npx publint run "$tarball"
npx attw "$tarball"
rm -rf "$out"
