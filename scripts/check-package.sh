#!/usr/bin/env bash
# Package hygiene on the real tarball: only what users need is in it, publint finds nothing, the
# types resolve for every consumer (ESM, CJS, node10, bundlers), and, installed in a consumer
# project, errors made by the CJS build are `instanceof` the ESM build's classes and back, with
# their codes (test/fixtures/package-errors/dual.mjs); and a consumer on ioredis 5 (a peer
# dependency: the application's one copy) type-checks against ioredis 5's types and locks on three
# local redis-server masters (test/fixtures/package-ioredis5).
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
# ioredis 5: the other major the peer dependency allows.
mkdir "$out/ioredis5"
echo '{ "name": "consumer-ioredis5", "private": true, "type": "module" }' >"$out/ioredis5/package.json"
cp test/fixtures/package-ioredis5/app.ts test/fixtures/package-ioredis5/tsconfig.json "$out/ioredis5/"
(cd "$out/ioredis5" && npm install --silent --prefer-offline --no-audit --no-fund --ignore-scripts "$tarball" ioredis@5 @types/node@20)
node node_modules/typescript/bin/tsc -p "$out/ioredis5/tsconfig.json"
ports=()
for _ in 1 2 3; do
  port=$(node -e "const s = require('net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })")
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --dir "$out" --pidfile "$out/redis-$port.pid" >/dev/null
  ports+=("$port")
done
trap 'for p in "${ports[@]}"; do kill "$(cat "$out/redis-$p.pid" 2>/dev/null)" 2>/dev/null || true; done; rm -rf "$out"' EXIT
for p in "${ports[@]}"; do until redis-cli -p "$p" ping >/dev/null 2>&1; do sleep 0.1; done; done
(cd "$out/ioredis5" && IOREDIS_VERSION="$(node -p "require('ioredis/package.json').version")" node out/app.js "${ports[@]}")

