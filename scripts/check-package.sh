#!/usr/bin/env bash
# Package hygiene on the real tarball: only what users need is in it, within its size budget,
# publint finds nothing, the types resolve for every consumer (ESM, CJS, node10, bundlers; attw,
# then compiled against under each, test/fixtures/package-types), and, installed in a consumer
# project, errors made by the CJS build are `instanceof` the ESM build's classes and back, with
# their codes (test/fixtures/package-errors/dual.mjs); a consumer on ioredis 5 and one on ioredis 6
# (a peer dependency: the application's one copy) type-check against that ioredis' own types and
# lock on local redis-server masters (test/fixtures/package-consumer); and the README's quick start
# (its trust command and first-lock example) compiles and locks from the tarball.
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
# The types as each resolution reads them, skipLibCheck off (test/fixtures/package-types): node16
# from ESM (.mts) and from CJS (.cts), node10, bundler.
types="$out/ioredis6/types"
mkdir "$types"
for ext in mts cts ts; do cp test/fixtures/package-types/consumer.ts "$types/consumer.$ext"; done
tsc=(node "$PWD/node_modules/typescript/bin/tsc" --noEmit --strict --skipLibCheck false --target es2022 --types node)
(cd "$types" && "${tsc[@]}" --module node16 consumer.mts consumer.cts && "${tsc[@]}" --module commonjs --moduleResolution node10 consumer.ts && "${tsc[@]}" --module esnext --moduleResolution bundler consumer.ts)
echo "check-package: the types check under node16 (ESM and CJS), node10 and bundler"
# The quick start as README.md spells it (in the ioredis 6 consumer): its trust command with the
# bin the tarball installs, then its first-lock example, type-checked and run on five masters.
dir="$out/ioredis6"
trust=$(cd "$dir" && node "$OLDPWD/test/fixtures/package-consumer/quickstart.mjs" "$OLDPWD/README.md" "${ports[@]}")
(cd "$dir" && sed -i 's/"app.ts"/"quickstart.ts"/' tsconfig.json && bash -c "$trust" >/dev/null && node "$OLDPWD/node_modules/typescript/bin/tsc" -p tsconfig.json && node out/quickstart.js)
