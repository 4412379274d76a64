/**
 * Start N independent masters for a test. The backend comes from QUORUMLOCK_TEST_BACKEND:
 * `process` (default: local redis-server processes) or `testcontainers` (needs a Docker-API engine).
 */
import { processBackend } from './process.js';
import type { Backend, MasterSet, StartOptions } from './types.js';

export type { Backend, Master, MasterSet, StartOptions } from './types.js';

export async function backendFromEnvironment(): Promise<Backend> {
  const name = process.env.QUORUMLOCK_TEST_BACKEND ?? 'process';
  if (name === 'process') return processBackend;
  if (name === 'testcontainers') return (await import('./containers.js')).containerBackend;
  throw new Error(`QUORUMLOCK_TEST_BACKEND must be "process" or "testcontainers", got "${name}"`);
}

export async function startMasters(count: number, options?: StartOptions): Promise<MasterSet> {
  return (await backendFromEnvironment()).start(count, options);
}
