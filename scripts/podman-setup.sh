#!/usr/bin/env bash
# Make a Docker-API engine for the testcontainers test backend out of rootful podman, with no registry:
# install podman, write a containers.conf, build a FROM-scratch redis image from the local redis-server,
# start `podman system service` on a unix socket. Idempotent; run as root.
#
#   eval "$(bash scripts/podman-setup.sh)"
#   QUORUMLOCK_TEST_BACKEND=testcontainers npx vitest run test/integration/containers-backend.test.ts
#
# Only the export lines go to stdout (so `eval` works); progress goes to stderr.
set -euo pipefail

# The default QUORUMLOCK_REDIS_IMAGE of test/harness/containers.ts. Built once: after upgrading redis-server,
# `podman rmi quorumlock-redis:local` and run this again.
IMAGE=quorumlock-redis:local
DIR="${QUORUMLOCK_PODMAN_DIR:-${XDG_RUNTIME_DIR:-/tmp}/quorumlock-podman}"
SOCKET="$DIR/podman.sock"
log() { echo "podman-setup: $*" >&2; }

[ "$(id -u)" -eq 0 ] || { log "must run as root (rootful podman)"; exit 1; }
mkdir -p "$DIR"

# 1. Packages. Try without `apt-get update` first: the lists are usually already there and fresh enough.
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
  log "installing podman runc slirp4netns"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y podman runc slirp4netns >&2 \
    || { apt-get update >&2 && apt-get install -y podman runc slirp4netns >&2; }
fi

# 2. containers.conf. Why each line:
#  - default_ulimits: podman asks runc for nofile=1048576, above this machine's hard limit, and every start
#    fails with "error setting rlimit type 7: operation not permitted".
#  - netns = "host": no bridge networking is needed; the masters bind 127.0.0.1 on the host network (the
#    backend also asks for host mode per container).
#  - runtime = "runc": the runtime apt installed; pinned so a later crun install changes nothing.
export CONTAINERS_CONF="$DIR/containers.conf"
cat >"$CONTAINERS_CONF" <<'EOF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
netns = "host"

[engine]
runtime = "runc"
EOF

# 3. The image: redis-server, every library ldd lists, and the dynamic loader, on an empty base.
#    No registry is reachable, so no `FROM debian`; a scratch image also has no shell (no exec waits).
if ! podman image exists "$IMAGE"; then
  REDIS_SERVER="$(command -v redis-server || true)"
  [ -n "$REDIS_SERVER" ] || { log "redis-server not found; apt-get install -y redis-server"; exit 1; }
  CONTEXT="$(mktemp -d)"
  trap 'rm -rf "$CONTEXT"' EXIT
  mkdir -p "$CONTEXT/rootfs/usr/bin" "$CONTEXT/rootfs/tmp"
  # Debian's redis-server is a symlink to the multi-call redis-check-rdb binary, which picks its mode from
  # argv[0]: copy the target under the name redis-server.
  cp -L "$REDIS_SERVER" "$CONTEXT/rootfs/usr/bin/redis-server"
  # ldd lines: "libx.so => /path (0x..)" or "/lib64/ld-linux-x86-64.so.2 (0x..)". Keep the paths the binary
  # asks for (-L follows the symlinks, so the copies are real files at those paths).
  ldd "$REDIS_SERVER" | grep -o '/[^ ]*' | while read -r lib; do
    cp -L --parents "$lib" "$CONTEXT/rootfs/"
  done
  cat >"$CONTEXT/Containerfile" <<'EOF'
FROM scratch
COPY rootfs/ /
WORKDIR /tmp
ENTRYPOINT ["/usr/bin/redis-server"]
EOF
  log "building $IMAGE from $REDIS_SERVER"
  podman build -q -t "$IMAGE" "$CONTEXT" >&2
fi

# 4. The Docker-compatible API. --time=0: never exit for inactivity.
#    A socket file alone proves nothing (it stays after the service dies), so ask the service itself.
#    A service started from a directory that was deleted since (an earlier CI clone) answers, but
#    every container it starts fails ("conmon: Failed to get working directory"): replace it.
#    Started from / so that this cannot happen again.
pid=$(cat "$DIR/service.pid" 2>/dev/null || true)
if [ -n "$pid" ] && case "$(readlink "/proc/$pid/cwd" 2>/dev/null)" in *" (deleted)") true ;; *) false ;; esac; then
  log "replacing the podman service (pid $pid): its working directory is gone"
  kill "$pid" 2>/dev/null || true
  sleep 0.5
fi
if ! podman --url "unix://$SOCKET" version >/dev/null 2>&1; then
  rm -f "$SOCKET"
  log "starting podman system service on $SOCKET"
  (cd / && exec nohup podman system service --time=0 "unix://$SOCKET" >"$DIR/service.log" 2>&1 </dev/null) &
  echo $! >"$DIR/service.pid"
  for _ in $(seq 50); do
    podman --url "unix://$SOCKET" version >/dev/null 2>&1 && break
    sleep 0.1
  done
  podman --url "unix://$SOCKET" version >/dev/null 2>&1 || { log "service did not come up; see $DIR/service.log"; exit 1; }
fi

echo "export DOCKER_HOST=unix://$SOCKET"
echo "export CONTAINERS_CONF=$CONTAINERS_CONF"
# Ryuk (the reaper container) would need a registry pull; the backend removes its own containers instead.
echo "export TESTCONTAINERS_RYUK_DISABLED=true"
# Otherwise testcontainers derives the host from DOCKER_HOST ("localhost" for a unix socket) and may pick ::1.
echo "export TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1"
