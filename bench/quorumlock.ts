/**
 * quorumlock as a benchmark runs it. With QUORUMLOCK_BENCH_BUILT=1 (npm run bench and
 * bench:profile build first and set it): the built package, dist/esm, which is what users
 * install. Otherwise the sources, through tsx. The two differ: tsx compiles with esbuild's
 * keepNames, which wraps every function quorumlock creates on its hot path in a __name() call, a
 * cost the peers (plain JavaScript from node_modules) and users never pay.
 */
import type * as Source from '../src/index.js';

const built = process.env.QUORUMLOCK_BENCH_BUILT === '1';
export const quorumlock = (built ? await import(new URL('../dist/esm/index.js', import.meta.url).href) : await import('../src/index.js')) as typeof Source;
export const from = built ? 'dist/esm (built)' : 'src (tsx)';
