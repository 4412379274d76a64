import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  target: 'node20',
  sourcemap: true,
  clean: true,
  // ioredis stays external (the user's copy). p-timeout is ESM-only: bundled, so require() works on every Node 20.
  noExternal: ['p-timeout'],
});
