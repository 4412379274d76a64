#!/usr/bin/env bash
# The lock tests again, on masters in containers (testcontainers). Needs a Docker-API engine: with
# Docker, set QUORUMLOCK_REDIS_IMAGE=redis:7; without one, rootful podman is set up here (root only).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${DOCKER_HOST:-}" ] && ! docker info >/dev/null 2>&1; then
  eval "$(bash scripts/podman-setup.sh)"
fi
export QUORUMLOCK_TEST_BACKEND=testcontainers
export QUORUMLOCK_TEST_WORKERS=2 # two files at a time, as vitest.config.ts says
exec npx vitest run test/integration/containers-backend.test.ts test/integration/lock.test.ts test/chaos/chaos-containers.test.ts "$@"
