#!/usr/bin/env bash
# Package hygiene on the real tarball: only what users need is in it, publint finds nothing, the
# types resolve for every consumer (ESM, CJS, node10, bundlers), and, installed in a consumer
# project, errors made by the CJS build are `instanceof` the ESM build's classes and back, with
# their codes (test/fixtures/package-errors/dual.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
npm run build >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
tarball="$out/$(npm pack --silent --pack-destination "$out" | tail -n 1)"
unexpected=$(tar tzf "$tarball" | grep -Ev '^package/(dist/|README\.md$|LICENSE$|package\.json$)' || true)
if [ -n "$unexpected" ]; then echo "check-package: unexpected files in the tarball:"; echo "$unexpected"; exit 1; fi
echo "check-package: $(tar tzf "$tarball" | wc -l) files, $(du -k "$tarball" | cut -f1) KiB"
npx publint run "$tarball"
npx attw "$tarball"
mkdir "$out/consumer"
echo '{ "name": "consumer", "private": true }' >"$out/consumer/package.json"
cp test/fixtures/package-errors/dual.mjs "$out/consumer/"
(cd "$out/consumer" && npm install --silent --prefer-offline --no-audit --no-fund --ignore-scripts "$tarball" && node dual.mjs)
