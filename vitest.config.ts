import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The container backend's own test needs an engine; it runs when that backend is chosen
    // (npm run test:containers), not as a skipped test in every other run.
    exclude: process.env.QUORUMLOCK_TEST_BACKEND === 'testcontainers' ? [] : ['test/integration/containers-backend.test.ts', 'test/chaos/chaos-containers.test.ts'],
    // Each file starts its own redis-server masters on free ports; two cores, so two at a time.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    globalSetup: ['test/harness/global-setup.ts'],
    reporters: ['default', './test/harness/summary-reporter.ts'],
  },
});
