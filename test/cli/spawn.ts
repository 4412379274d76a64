/**
 * The quorumlock CLI as a user runs it: a child process, `node <bundle>`, src/cli/main.ts bundled
 * as the build bundles it (tsx would compile the sources again in every child: 0.3 s and 0.4 s of
 * CPU more per start, over a hundred starts a run).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, buildSync, type BuildOptions } from 'esbuild';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startTestMasters, type TestMasters } from '../integration/masters.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface Cli {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  /** Resolves once `text` appears on stdout. */
  waitFor(text: string): Promise<void>;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; ms: number }>;
}

const running = new Set<ChildProcess>();

/**
 * The bin as installed: src/cli/main.ts bundled as scripts/build.mjs bundles it, into a package
 * laid out like the published one (<root>/dist/cli/main.js beside <root>/package.json), under the
 * repository's .tmp/ so that its ioredis import resolves. Built once per test file.
 */
let built: Promise<string> | undefined;
/** The CLI bundled on its own as one ESM file at `outfile` (ioredis left to resolve beside it). */
export async function bundleCli(outfile: string): Promise<void> {
  await build(bundleOptions(outfile));
}

const bundleOptions = (outfile: string): BuildOptions => ({
  entryPoints: [join(ROOT, 'src/cli/main.ts')],
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  external: ['ioredis'],
  outfile,
  logLevel: 'silent',
});

/**
 * The CLI bundled for this test file's process, built at its first start: <root>/.tmp/<dir>/main.js,
 * two levels under the repository, so that it reads <root>/package.json as src/cli/main.ts does
 * and resolves ioredis and the other client libraries from <root>/node_modules.
 */
let bundledDir: string | undefined;
function bundledCli(): string {
  if (bundledDir === undefined) {
    mkdirSync(join(ROOT, '.tmp'), { recursive: true });
    bundledDir = mkdtempSync(join(ROOT, '.tmp', 'cli-'));
    buildSync(bundleOptions(join(bundledDir, 'main.js')));
  }
  return join(bundledDir, 'main.js');
}
afterAll(() => {
  if (bundledDir !== undefined) rmSync(bundledDir, { recursive: true, force: true });
  bundledDir = undefined;
});

export function builtBin(): Promise<string> {
  built ??= (async () => {
    mkdirSync(join(ROOT, '.tmp'), { recursive: true });
    const root = mkdtempSync(join(ROOT, '.tmp', 'built-cli-'));
    await bundleCli(join(root, 'dist/cli/main.js'));
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'quorumlock', version: '0.0.0-test', type: 'module' }));
    return join(root, 'dist/cli/main.js');
  })();
  return built;
}

/** Removes what builtBin() built. */
export function removeBuiltBin(): void {
  const bin = built;
  built = undefined;
  void bin?.then((path) => rmSync(join(path, '../../..'), { recursive: true, force: true }));
}

/** Runs the built bin (`node <root>/dist/cli/main.js …`) as cron or a supervisor would: no tsx, no npm. */
export async function builtCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Cli> {
  return spawnCli(process.execPath, [await builtBin(), ...args], env);
}

/** A process's state letter from /proc/<pid>/stat (R, S, T: stopped, Z: zombie, ...), '' once it is gone. */
export function stateOf(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // "pid (comm) state ...": comm may hold spaces and parentheses, so read after the last ")".
    return stat.charAt(stat.lastIndexOf(')') + 2);
  } catch {
    return '';
  }
}

/** Whether process `pid` runs: not gone, and not a zombie (a killed orphan waits for init to reap it). */
export function alive(pid: number): boolean {
  return !['', 'Z', 'X'].includes(stateOf(pid));
}

/** Resolves with the ms it took once `condition()` holds, polled every 5 ms; rejects after `timeoutMs`. */
export async function within(timeoutMs: number, condition: () => boolean | Promise<boolean>, what = 'the condition'): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await condition()) return performance.now() - started;
    if (performance.now() - started > timeoutMs) throw new Error(`${what} did not hold within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Whether every member holds `resource`'s key. A `run` starts its command once a majority
 * granted; the last member's key may land later (its acquire waits for that member's epoch
 * read): wait for it with within(), not one read.
 */
export const everyMemberHolds = async (masters: TestMasters, resource: string): Promise<boolean> =>
  (await masters.valuesOf(resource)).every((value) => value !== null);

/** Runs the CLI with `args`; QUORUMLOCK_MEMBERS is cleared unless `env` sets it. `stdout`: a file descriptor to write it to, instead of a pipe read into `stdout`. */
export function cli(args: string[], env: NodeJS.ProcessEnv = {}, stdout?: number): Cli {
  return spawnCli(process.execPath, [bundledCli(), ...args], env, stdout);
}

const shellQuote = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`;

/**
 * Runs the CLI on a terminal: under script(1), which gives it a pseudo-terminal as stdin, stdout
 * and stderr, and copies what it writes there to script's stdout (`stdout` here, both streams).
 */
export function cliOnTerminal(args: string[], env: NodeJS.ProcessEnv = {}): Cli {
  const command = [process.execPath, bundledCli(), ...args].map(shellQuote).join(' ');
  return spawnCli('script', ['-qfec', command, '/dev/null'], env);
}

function spawnCli(file: string, args: string[], env: NodeJS.ProcessEnv, stdout: number | 'pipe' = 'pipe'): Cli {
  const started = performance.now();
  const child = spawn(file, args, {
    cwd: ROOT,
    env: { ...process.env, QUORUMLOCK_MEMBERS: '', ...env },
    stdio: ['ignore', stdout, 'pipe'],
  });
  running.add(child);
  const result: Cli = {
    child,
    stdout: '',
    stderr: '',
    waitFor(text) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (result.stdout.includes(text)) {
            child.stdout!.off('data', check);
            resolve();
          }
        };
        child.stdout!.on('data', check);
        child.once('close', () => reject(new Error(`exited before printing ${text}: ${result.stdout}\n${result.stderr}`)));
        check();
      });
    },
    done: new Promise((resolve) => {
      child.once('close', (code, signal) => {
        running.delete(child);
        resolve({ code, signal, stdout: result.stdout, stderr: result.stderr, ms: performance.now() - started });
      });
    }),
  };
  child.stdout?.on('data', (chunk: Buffer) => (result.stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (result.stderr += chunk.toString()));
  return result;
}

/** SIGKILLs every CLI process a test left running. */
export function killRunning(): void {
  for (const child of running) child.kill('SIGKILL');
}

/**
 * `count` distinct loopback ports nothing listens on: 1, 2, 3, … No test binds them and the
 * system never hands them out. (Ports bound and closed again were not safe: three binds in turn
 * once gave two equal ports, which the CLI rightly refused as a member listed twice, and a closed
 * ephemeral port may be another test file's new redis-server a moment later.)
 */
export function closedPorts(count: number): number[] {
  return Array.from({ length: count }, (_, index) => index + 1);
}

/** The --json event lines of a run's stderr. */
export function events(stderr: string): Record<string, unknown>[] {
  return stderr
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Resolves with the first complete --json event on stderr that `matches`; rejects after `timeoutMs` or when the CLI exits first. */
export function waitForEvent(cli: Cli, matches: (event: Record<string, unknown>) => boolean, timeoutMs = 15_000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(new Error(`no such event within ${timeoutMs} ms: ${cli.stderr}`)), timeoutMs);
    const check = () => {
      const complete = cli.stderr.slice(0, cli.stderr.lastIndexOf('\n') + 1);
      const found = events(complete).find(matches);
      if (found) finish(undefined, found);
    };
    const exited = () => finish(new Error(`exited before the event: ${cli.stdout}\n${cli.stderr}`));
    const finish = (error?: Error, event?: Record<string, unknown>) => {
      clearTimeout(timer);
      cli.child.stderr!.off('data', check);
      cli.child.off('close', exited);
      if (error) reject(error);
      else resolve(event!);
    };
    cli.child.stderr!.on('data', check);
    cli.child.once('close', exited);
    check();
  });
}

/** A node one-liner as the locked command. */
export const nodeCommand = (code: string) => ['--', process.execPath, '-e', code];

/** `quorumlock run --members <members> --resource <resource> --ttl <ttl> [flags] -- node -e <script>`. */
export function runCli(members: string, resource: string, ttl: string, script: string, flags: string[] = [], env?: NodeJS.ProcessEnv): Cli {
  return cli(['run', '--members', members, '--resource', resource, '--ttl', ttl, ...flags, ...nodeCommand(script)], env);
}

/** A holder that keeps `resource` until killed; resolves once its command runs. */
export async function hold(members: string, resource: string, ttl = '10s'): Promise<Cli> {
  const holder = runCli(members, resource, ttl, 'console.log("holding"); setTimeout(() => {}, 30000)');
  await holder.waitFor('holding');
  return holder;
}

/**
 * For a test file: `count` real masters started before its tests, resumed (and every CLI child
 * killed) after each test, closed after the file. `ready` gets them and their redis:// URLs.
 */
export function withMasters(count: number, ready: (masters: TestMasters, members: string) => void): void {
  let masters: TestMasters | undefined;
  beforeAll(async () => {
    masters = await startTestMasters(count);
    ready(masters, masters.masters.map((master) => `redis://${master.host}:${master.port}`).join(','));
  });
  afterEach(async () => {
    killRunning();
    await masters?.resumeAll();
  });
  afterAll(async () => {
    await masters?.close();
  });
}
