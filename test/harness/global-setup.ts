/**
 * The integration project's global setup (vitest.config.ts): fails the run at once, with install
 * instructions, when redis-server is missing. The unit project (test/unit, test/model) has no
 * such setup and runs without a server.
 */
import { spawnSync } from 'node:child_process';
import { INSTALL_HINT, redisServerBinary } from './process.js';

export default function checkRedisServer(): void {
  if ((process.env.QUORUMLOCK_TEST_BACKEND ?? 'process') !== 'process') return;
  const probe = spawnSync(redisServerBinary(), ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) throw new Error(`${INSTALL_HINT}\nThe tests that need no server run without it: npx vitest run --project unit`);
}
