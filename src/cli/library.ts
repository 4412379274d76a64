/**
 * The client library the CLI makes its connections with: ioredis, or iovalkey (its fork, the
 * same API) when only that is installed. The library itself takes node-redis and GLIDE clients
 * too, but the CLI builds Sentinel groups, Clusters, TLS and per-command timeouts from member
 * URLs, which it does with one API (docs/cli.md, "Client library"). Loaded once, at start.
 */
import type * as IORedis from 'ioredis';
import { EXIT } from './errors.js';

type Library = Pick<typeof IORedis, 'Redis' | 'Cluster'>;

async function load(): Promise<Library> {
  for (const name of ['ioredis', 'iovalkey']) {
    try {
      return (await import(name)) as Library;
    } catch (error) {
      if ((error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    }
  }
  process.stderr.write('quorumlock: the command line connects with ioredis or iovalkey; install one beside quorumlock (npm install ioredis)\n');
  process.exit(EXIT.unavailable);
}

export const { Redis, Cluster } = await load();
