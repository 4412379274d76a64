import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Each file starts its own redis-server masters on free ports; two cores, so two at a time.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    globalSetup: ['test/harness/global-setup.ts'],
  },
});
