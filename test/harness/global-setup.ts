/**
 * The integration project's global setup (vitest.config.ts): fails the run at once, with install
 * instructions, when redis-server is missing. The unit project (test/unit, test/model) has no
 * such setup and runs without a server. (vitest.config.ts makes the same check before vitest
 * starts, so that `npm test` prints nothing else first; this one covers runs given other configs.)
 */
import { missingRedisServer } from './process.js';

export default function checkRedisServer(): void {
  if ((process.env.QUORUMLOCK_TEST_BACKEND ?? 'process') !== 'process') return;
  const missing = missingRedisServer();
  if (missing) throw new Error(missing);
}
