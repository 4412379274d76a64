import { defineConfig } from 'vitest/config';
import { missingRedisServer } from './test/harness/process.js';

/** Tests that need no server: the algorithm on fake members, pure parts, the Lua model. */
const unit = ['test/unit/**/*.test.ts', 'test/model/**/*.test.ts'];

/**
 * The chaos scenarios (faults against many clients for seconds each): `npm run test:chaos`, which
 * CI runs after `npm test`, so that the default suite stays short (about three minutes on two cores).
 */
const chaos = ['test/chaos/chaos.test.ts', 'test/chaos/*-chaos.test.ts'];

// The container backend's own tests need an engine; they run when that backend is chosen
// (npm run test:containers), not as skipped tests in every other run.
const containersOnly =
  process.env.QUORUMLOCK_TEST_BACKEND === 'testcontainers' ? [] : ['test/integration/containers-backend.test.ts', 'test/chaos/chaos-containers.test.ts'];

// The integration tests start redis-server processes: without one, say how to get it and stop,
// before vitest prints anything else (its "No test files found" would come first otherwise).
const unitOnly = process.argv.some((arg, index) => arg === '--project=unit' || (arg === '--project' && process.argv[index + 1] === 'unit'));
if (!unitOnly && (process.env.QUORUMLOCK_TEST_BACKEND ?? 'process') === 'process') {
  const missing = missingRedisServer();
  if (missing) {
    process.stderr.write(`\n${missing}\n\n`);
    process.exit(1);
  }
}

export default defineConfig({
  test: {
    // Options here hold for both projects (`extends: true`) or for the whole run (maxWorkers,
    // reporters). include, exclude and globalSetup live in the projects only: an inline project
    // appends arrays to the root's rather than replacing them.
    // Each integration file starts its own redis-server masters on free ports. Three files at a
    // time on two cores: much of a file's time is waiting (ttls, deadlines, child processes), and
    // with two the suite used 117 % of a core over 4:01; with three, 155 % over 3:04 (four: 173 %
    // over 2:42, and two timing failures with one more core busy). The chaos and container runs,
    // busier per file, keep two: QUORUMLOCK_TEST_WORKERS=2 in npm run test:chaos and
    // scripts/test-*.sh (an env read here, as each project takes maxWorkers from this config, not
    // from the command line's --maxWorkers).
    pool: 'forks',
    maxWorkers: Number(process.env.QUORUMLOCK_TEST_WORKERS ?? 3),
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ['default', './test/harness/summary-reporter.ts'],
    projects: [
      {
        // `npx vitest run --project unit`: runs without redis-server installed.
        extends: true,
        test: { name: 'unit', include: unit },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [...unit, ...chaos, ...containersOnly],
          // Fails the run at once, with install instructions, when redis-server is missing.
          globalSetup: ['test/harness/global-setup.ts'],
          setupFiles: ['test/harness/quiet-glide.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'chaos',
          include: chaos,
          exclude: containersOnly,
          globalSetup: ['test/harness/global-setup.ts'],
          setupFiles: ['test/harness/quiet-glide.ts'],
        },
      },
    ],
  },
});
