#!/usr/bin/env bash
# Package hygiene on the real tarball: only what users need is in it, within its size budget,
# publint finds nothing, the types resolve for every consumer (ESM, CJS, node10, bundlers; attw,
# then compiled against under each, test/fixtures/package-types), and, installed in a consumer
# project, require() and import give one copy, errors keep their classes and codes
# (test/fixtures/package-errors/dual.mjs); a consumer on ioredis 5 and one on ioredis 6 (a peer
# dependency: the application's one copy) type-check against that ioredis' own types and lock on
# local redis-server masters (test/fixtures/package-consumer); consumers with one other client
# library each and no ioredis (redis 5, redis 6, iovalkey, Valkey GLIDE) type-check, run the lock
# family and load the CLI or are told it needs ioredis (scripts/check-package-clients.sh); and the
# README's quick start runs as written, from starting the masters to a script that exits by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
npm run build >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
tarball="$out/$(npm pack --silent --pack-destination "$out" | tail -n 1)"
unexpected=$(tar tzf "$tarball" | grep -Ev '^package/(dist/|README\.md$|CHANGELOG\.md$|LICENSE$|package\.json$)' || true)
if [ -n "$unexpected" ]; then echo "check-package: unexpected files in the tarball:"; echo "$unexpected"; exit 1; fi
# The size budget (issue 22): the files of the tarball add up to at most 550 kB.
node -e '
  const [pack] = JSON.parse(require("child_process").execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { encoding: "utf8" }));
  console.log(`check-package: ${pack.entryCount} files, ${pack.size} bytes packed, ${pack.unpackedSize} unpacked`);
  if (pack.unpackedSize > 550000) { console.error("check-package: the files add up to more than 550 kB"); process.exit(1); }
'
npx publint run "$tarball"
npx attw "$tarball"
mkdir "$out/consumer"
echo '{ "name": "consumer", "private": true }' >"$out/consumer/package.json"
cp test/fixtures/package-errors/dual.mjs "$out/consumer/"
(cd "$out/consumer" && npm install --silent --prefer-offline --no-audit --no-fund --ignore-scripts "$tarball" && node dual.mjs)
# Consumers on each ioredis major the peer dependency allows, and the README's quick start.
ports=()
for _ in 1 2 3 4 5; do
  port=$(node -e "const s = require('net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })")
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --dir "$out" --pidfile "$out/redis-$port.pid" >/dev/null
  ports+=("$port")
done
trap 'for p in "${ports[@]}"; do kill "$(cat "$out/redis-$p.pid" 2>/dev/null)" 2>/dev/null || true; done; rm -rf "$out"' EXIT
for p in "${ports[@]}"; do until redis-cli -p "$p" ping >/dev/null 2>&1; do sleep 0.1; done; done
for major in 5 6; do
  dir="$out/ioredis$major"
  mkdir "$dir"
  echo "{ \"name\": \"consumer-ioredis$major\", \"private\": true, \"type\": \"module\" }" >"$dir/package.json"
  cp test/fixtures/package-consumer/app.ts test/fixtures/package-consumer/tsconfig.json "$dir/"
  (cd "$dir" && npm install --silent --prefer-offline --no-audit --no-fund --ignore-scripts "$tarball" "ioredis@$major" @types/node@20)
  node node_modules/typescript/bin/tsc -p "$dir/tsconfig.json"
  (cd "$dir" && IOREDIS_VERSION="$(node -p "require('ioredis/package.json').version")" node out/app.js "${ports[@]:0:3}")
done
# Consumers on node-redis, iovalkey or GLIDE alone, without ioredis (test/fixtures/package-clients).
bash scripts/check-package-clients.sh "$tarball" "$out" "${ports[@]:0:3}"
# The types as each resolution reads them, skipLibCheck off (test/fixtures/package-types): node16
# from ESM (.mts) and from CJS (.cts), node10, bundler.
types="$out/ioredis6/types"
mkdir "$types"
for ext in mts cts ts; do cp test/fixtures/package-types/consumer.ts "$types/consumer.$ext"; done
tsc=(node "$PWD/node_modules/typescript/bin/tsc" --noEmit --strict --skipLibCheck false --target es2022 --types node)
(cd "$types" && "${tsc[@]}" --module node16 consumer.mts consumer.cts && "${tsc[@]}" --module commonjs --moduleResolution node10 consumer.ts && "${tsc[@]}" --module esnext --moduleResolution bundler consumer.ts)
echo "check-package: the types check under node16 (ESM and CJS), node10 and bundler"
# The quick start as README.md spells it (in the ioredis 6 consumer), with only its ports swapped
# (test/fixtures/package-consumer/quickstart.mjs): step 1's redis-server line starts five masters,
# step 2's trust line runs the bin the tarball installs, step 3's script is type-checked (checkJs)
# and must exit 0 by itself, then with the "Beyond one exclusive lock" block; its stop line ends them.
dir="$out/ioredis6"
quick=()
for _ in 1 2 3 4 5; do quick+=("$(node -e "const s = require('net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })")"); done
trap 'for p in "${ports[@]}"; do kill "$(cat "$out/redis-$p.pid" 2>/dev/null)" 2>/dev/null || true; done; for p in "${quick[@]}"; do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true; done; rm -rf "$out"' EXIT
script=$(cd "$dir" && node "$OLDPWD/test/fixtures/package-consumer/quickstart.mjs" "$OLDPWD/README.md" "${quick[@]}")
cd "$dir"
bash masters.sh >/dev/null
for p in "${quick[@]}"; do until redis-cli -p "$p" ping >/dev/null 2>&1; do sleep 0.1; done; done
bash trust.sh >/dev/null
"${tsc[@]}" --allowJs --checkJs --module nodenext "$script" family.mjs
timeout 30 node "$script" || { echo "check-package: README's $script did not exit 0 by itself within 30 s (status $?)"; exit 1; }
timeout 30 node family.mjs >/dev/null || { echo "check-package: README's script with the lock-family block did not exit 0 within 30 s"; exit 1; }
bash stop.sh
echo "check-package: the README quick start runs as written: masters, trust, $script (exits by itself), the lock family"
