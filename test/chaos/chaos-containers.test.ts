/**
 * The kill-restart scenario with the masters in containers (QUORUMLOCK_TEST_BACKEND=testcontainers):
 * SIGKILL is `docker kill`, the restart is a new empty container on the same port. Needs a Docker-API
 * engine (scripts/podman-setup.sh); runs from scripts/test-containers.sh, excluded otherwise.
 */
import { expect, it } from 'vitest';
import { backendFromEnvironment } from '../harness/index.js';
import { runScenario } from './scenarios.js';

it('kill-restart on containers: restarted members let nobody else in while the holder holds', async () => {
  expect((await backendFromEnvironment()).name).toBe('testcontainers');
  const result = await runScenario('kill-restart', { seconds: 15, quarantine: true, fencing: true });
  expect(result.backend).toBe('testcontainers');
  expect(result.faults.restarts).toBeGreaterThanOrEqual(1);
  expect(result.acquisitions).toBeGreaterThanOrEqual(3);
  expect({ overlaps: result.overlapViolations, fences: result.fenceViolations }).toEqual({ overlaps: 0, fences: 0 });
  expect(result.fenced).toBe(result.acquisitions);
}, 120_000);
