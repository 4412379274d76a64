#!/usr/bin/env bash
# Consumers with one client library each and no ioredis (called by check-package.sh, with the
# packed tarball, a scratch folder and the ports of three running masters): redis@5, redis@6,
# iovalkey and @valkey/valkey-glide, installed alone beside the tarball. In each:
#   - ioredis is not installed: the tarball brings no client library the user did not choose;
#   - the consumer code (test/fixtures/package-clients: the library's own factory, its clients
#     passed to new Redlock with no cast) type-checks as ESM (.mts) and CommonJS (.cts), strict,
#     nodenext, skipLibCheck off;
#   - its ESM build runs the lock family on the masters and exits 0 by itself (timeout 30);
#   - require('quorumlock') works from a .cjs file;
# and the CLI: with node-redis only it says it needs ioredis or iovalkey and exits 69; with
# iovalkey only it connects through iovalkey.
set -euo pipefail
cd "$(dirname "$0")/.."
tarball=$1 out=$2
shift 2
ports=("$@")
members=$(printf 'redis://127.0.0.1:%s,' "${ports[@]}")
members=${members%,}
fixtures="$PWD/test/fixtures/package-clients"
tsc=(node "$PWD/node_modules/typescript/bin/tsc" --strict --module nodenext --moduleResolution nodenext --skipLibCheck false --target es2022 --types node)

# consumer NAME APP PACKAGE...: installs the tarball and PACKAGE... in $out/NAME, type-checks APP
# (a fixture, with scenario.ts) as .mts and .cts, runs the ESM build (.mjs) and require.cjs.
consumer() {
  local name=$1 app=$2
  shift 2
  local dir="$out/$name"
  mkdir "$dir"
  echo "{ \"name\": \"consumer-$name\", \"private\": true, \"type\": \"module\" }" >"$dir/package.json"
  # --ignore-scripts: no install script of any dependency runs (GLIDE's native binary is a
  # platform package, needing none; protobufjs' postinstall only checks its own versions).
  (cd "$dir" && npm install --silent --prefer-offline --no-audit --no-fund --ignore-scripts "$tarball" "$@" @types/node@20)
  if (cd "$dir" && node -e "require.resolve('ioredis')" 2>/dev/null); then
    echo "check-package: installing quorumlock with $* installed ioredis"
    exit 1
  fi
  local package=${1%@*}
  [ -n "$package" ] || package=$1
  local version
  version=$(node -p "require('$dir/node_modules/$package/package.json').version")
  # The fixtures' relative imports (./scenario.js) name the .mjs or .cjs file each copy becomes.
  for ext in m c; do
    for file in scenario "$app"; do sed -E "s#'\./([a-z-]+)\.js'#'./\1.${ext}js'#" "$fixtures/$file.ts" >"$dir/$file.${ext}ts"; done
  done
  cp "$fixtures/require.cjs" "$dir/"
  # One program holds both copies (one tsc start, the library's types read once); it emits .mjs and .cjs.
  (cd "$dir" && "${tsc[@]}" --outDir . "$app.mts" "$app.cts")
  (cd "$dir" && LIBRARY_VERSION=$version timeout 30 node "$app.mjs" "${ports[@]}") || {
    echo "check-package: the $name consumer did not exit 0 by itself within 30 s (status $?)"
    exit 1
  }
  (cd "$dir" && node require.cjs "$package $version")
}

consumer redis5 node-redis redis@5
consumer redis6 node-redis redis@6
consumer iovalkey iovalkey iovalkey
consumer glide glide @valkey/valkey-glide

# The CLI: node-redis does not serve it (src/cli/library.ts), iovalkey does.
status=0
message=$(cd "$out/redis6" && QUORUMLOCK_MEMBERS=$members npx --no-install quorumlock members 2>&1) || status=$?
if [ "$status" != 69 ] || ! grep -q 'ioredis or iovalkey' <<<"$message"; then
  echo "check-package: the CLI without ioredis or iovalkey exited $status (not 69), saying: $message"
  exit 1
fi
(cd "$out/iovalkey" && QUORUMLOCK_MEMBERS=$members timeout 30 npx --no-install quorumlock members >/dev/null) || {
  echo "check-package: quorumlock members with iovalkey only failed (status $?)"
  exit 1
}
echo "check-package: the CLI with node-redis only exits 69 (it needs ioredis or iovalkey); with iovalkey only, quorumlock members connects"
