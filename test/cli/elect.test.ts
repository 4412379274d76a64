/**
 * `quorumlock elect` as a user runs it: child processes (node, the CLI bundled from src/: spawn.ts)
 * against three real redis-server masters.
 */
import { describe, expect, it } from 'vitest';
import { electionResource } from '../../src/store/keys.js';
import type { TestMasters } from '../integration/masters.js';
import { cli, events, nodeCommand, type Cli, waitForEvent, withMasters } from './spawn.js';

let t: TestMasters;
let members: string;
withMasters(3, (masters, urls) => {
  t = masters;
  members = urls;
});

/**
 * The led command: prints "leading <term> <fence>", says "stopped" on SIGTERM, and exits by
 * itself should its elect process vanish (a SIGKILLed elect cannot stop it). The handler goes in
 * before the line is printed: a test that signals on seeing the line must find it in place.
 */
const LEADER_SCRIPT = `
const parent = process.ppid;
process.on('SIGTERM', () => { console.log('stopped ' + process.env.QUORUMLOCK_TERM); process.exit(0); });
console.log('leading ' + process.env.QUORUMLOCK_TERM + ' ' + process.env.QUORUMLOCK_FENCE);
setInterval(() => { try { process.kill(parent, 0); } catch { process.exit(0); } }, 50);
`;

const elect = (name: string, ttl: string, script: string, flags: string[] = []): Cli =>
  cli(['elect', '--members', members, '--name', name, '--ttl', ttl, ...flags, ...nodeCommand(script)]);

/** The terms of the "leading <term> <fence>" lines printed so far. */
const termsOf = (stdout: string) => [...stdout.matchAll(/^leading (\d+) (\d+)$/gm)].map((match) => ({ term: Number(match[1]), fence: Number(match[2]) }));

describe('elect', () => {
  it('runs the command with QUORUMLOCK_TERM (and QUORUMLOCK_FENCE, the same token), and exits with its code after resigning', async () => {
    const print =
      'console.log(JSON.stringify({ term: process.env.QUORUMLOCK_TERM, fence: process.env.QUORUMLOCK_FENCE, name: process.env.QUORUMLOCK_RESOURCE })); process.exit(3)';
    const first = await elect('elect-env', '2s', print).done;
    expect(first.code).toBe(3);
    const env = JSON.parse(first.stdout) as { term: string; fence: string; name: string };
    expect(env.term).toMatch(/^\d+$/);
    expect(env.fence).toBe(env.term);
    expect(env.name).toBe('elect-env');
    // Resigned at exit: the next one is elected at once, with a larger term.
    const second = await elect('elect-env', '2s', print).done;
    expect(Number((JSON.parse(second.stdout) as { term: string }).term)).toBeGreaterThan(Number(env.term));
  });

  it('refuses a missing --name or a ttl too short, as usage errors', async () => {
    const noName = await cli(['elect', '--members', members, '--ttl', '2s', ...nodeCommand('0')]).done;
    expect(noName.code).toBe(64);
    expect(noName.stderr).toMatch(/--name is required/);
    const short = await elect('elect-short', '200ms', '0').done;
    expect(short.code).toBe(64);
    expect(short.stderr).toMatch(/ttl/);
    // With --json, the library's refusal too is a `failed` event (stderr carries JSON lines only).
    const shortJson = await elect('elect-short', '200ms', '0', ['--json']).done;
    expect(shortJson.code).toBe(64);
    expect(events(shortJson.stderr)).toEqual([
      expect.objectContaining({ event: 'failed', outcome: 'usage', code: expect.any(String), reason: expect.stringMatching(/ttl/), exitCode: 64 }),
    ]);
  });

  it('a second elect waits, and takes over (with a larger term) only when the first is SIGKILLed', async () => {
    const first = elect('elect-takeover', '1s', LEADER_SCRIPT);
    await first.waitFor('leading');
    const second = elect('elect-takeover', '1s', LEADER_SCRIPT, ['--json']);
    // Waits while the first leads: well past several of the first one's extensions.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(termsOf(second.stdout)).toEqual([]);
    // And says why, once.
    expect(await waitForEvent(second, (event) => event.event === 'waiting')).toMatchObject({
      cause: 'held',
      reason: 'waiting to lead "elect-takeover": another candidate leads',
    });
    first.child.kill('SIGKILL');
    await second.waitFor('leading');
    const [before] = termsOf(first.stdout);
    const [after] = termsOf(second.stdout);
    expect(after!.term).toBeGreaterThan(before!.term);
    expect(after!.fence).toBe(after!.term);
    // SIGTERM is forwarded to the command, which stops; elect then exits with its code.
    second.child.kill('SIGTERM');
    const done = await second.done;
    expect(done.stdout).toContain(`stopped ${after!.term}`);
    expect(done.code).toBe(0);
  });

  it('says why it waits, once per reason: members not answering, then in their restart quarantine; then that it was elected', async () => {
    try {
      // In words on stderr, and quiet when elected at once.
      await Promise.all(t.masters.slice(0, 2).map((master) => master.pause()));
      const plain = elect('elect-waits-plain', '1s', LEADER_SCRIPT);
      await expect.poll(() => plain.stderr, { timeout: 15_000 }).toContain('quorumlock: waiting to lead "elect-waits-plain": 2 members not answering');
      await t.resumeAll();
      await plain.waitFor('leading');
      expect(plain.stderr).toContain('quorumlock: elected: leading "elect-waits-plain"');
      plain.child.kill('SIGTERM');
      await plain.done;
      const quiet = await elect('elect-waits-plain', '1s', 'process.exit(0)').done;
      expect(quiet).toMatchObject({ code: 0, stderr: '' });

      // As --json events, with each member's state.
      await Promise.all(t.masters.slice(0, 2).map((master) => master.pause()));
      const candidate = elect('elect-waits', '1s', LEADER_SCRIPT, ['--json']);
      const silent = await waitForEvent(candidate, (event) => event.event === 'waiting');
      expect(silent).toMatchObject({
        election: 'elect-waits',
        cause: 'unreachable',
        count: 2,
        reason: 'waiting to lead "elect-waits": 2 members not answering',
      });
      expect((silent.members as { state: string }[]).filter((member) => /not answering/.test(member.state))).toHaveLength(2);
      // One back empty: inside its restart quarantine it does not count yet (nor does the one still paused).
      await t.masters[0]!.restart();
      const quarantined = await waitForEvent(candidate, (event) => event.event === 'waiting' && event.cause === 'quarantined');
      expect(quarantined).toMatchObject({ count: 1, reason: expect.stringMatching(/1 member in its restart quarantine \(up to .* left\)/) });
      // The paused one back: with the third, a quorum that counts.
      await t.masters[1]!.resume();
      await candidate.waitFor('leading');
      candidate.child.kill('SIGTERM');
      const done = await candidate.done;
      // Told when the reason changed, not on every retry (a round every few ms, for seconds).
      const kinds = events(done.stderr).map((event) => event.event);
      expect(kinds.filter((kind) => kind === 'waiting')).toHaveLength(2);
      expect(kinds.indexOf('elected')).toBeGreaterThan(kinds.lastIndexOf('waiting'));
    } finally {
      await t.heal();
    }
  });

  it('stops the command when leadership is lost (two of three members paused), then campaigns again and runs it under a new term', async () => {
    const leader = elect('elect-lost', '1s', LEADER_SCRIPT, ['--json']);
    await leader.waitFor('leading');
    await Promise.all(t.masters.slice(0, 2).map((master) => master.pause()));
    await leader.waitFor('stopped');
    await t.resumeAll();
    // Elected again once the members answer: a second "leading" line, with a larger term.
    await new Promise<void>((resolve, reject) => {
      const check = () => (termsOf(leader.stdout).length >= 2 ? resolve() : undefined);
      leader.child.stdout!.on('data', check);
      leader.child.once('close', () => reject(new Error(`exited: ${leader.stdout}\n${leader.stderr}`)));
      check();
    });
    const [first, second] = termsOf(leader.stdout);
    expect(second!.term).toBeGreaterThan(first!.term);
    leader.child.kill('SIGTERM');
    const done = await leader.done;
    const kinds = events(done.stderr).map((event) => event.event);
    expect(kinds.filter((kind) => kind === 'elected')).toHaveLength(2);
    expect(kinds).toContain('lost');
    expect(kinds).toContain('campaign');
  });
});

describe('leader', () => {
  const leader = (name: string, flags: string[] = []) => cli(['leader', name, '--members', members, ...flags]).done;

  it('names the leader (exit 0), says vacant (exit 3), and cannot tell with too few answers (exit 69) or no quorum agreeing (exit 75)', async () => {
    const vacant = await leader('who-leads');
    expect(vacant).toMatchObject({ code: 3, stdout: 'who-leads: vacant, nobody leads; 3 of 3 members answered (quorum 2)\n' });

    const elected = elect('who-leads', '5s', LEADER_SCRIPT, ['--id', 'host-a']);
    await elected.waitFor('leading');
    const term = termsOf(elected.stdout)[0]!.term;
    const plain = await leader('who-leads');
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(
      new RegExp(`^who-leads: led by host-a, term ${term} \\(held for at least .* more\\); 3 of 3 members answered \\(quorum 2\\)\\n$`),
    );
    const json = JSON.parse((await leader('who-leads', ['--json'])).stdout) as Record<string, unknown>;
    expect(json).toMatchObject({ election: 'who-leads', state: 'led', leader: { id: 'host-a', term }, quorum: 2, answered: 3, exitCode: 0 });

    // Two of three paused: the one that answers cannot speak for a quorum.
    await Promise.all(t.masters.slice(0, 2).map((master) => master.pause()));
    const unknown = await leader('who-leads', ['--json', '--timeout', '300ms']);
    expect(unknown.code).toBe(69);
    expect(JSON.parse(unknown.stdout)).toMatchObject({ state: 'unknown', why: 'unavailable', answered: 1 });
    await t.resumeAll();
    elected.child.kill('SIGTERM');
    await elected.done;

    // A lock key with no leader record on one member, absent on the others: all answered, no quorum names a leader.
    await t.clients[0]!.set(electionResource('who-leads'), 'not a leader', 'PX', 10_000);
    try {
      const undecided = await leader('who-leads');
      expect(undecided.code).toBe(75);
      expect(undecided.stdout).toContain('who-leads: cannot tell who leads: no quorum names one leader yet');
    } finally {
      await t.clients[0]!.del(electionResource('who-leads'));
    }
  });

  it('refuses a missing or an invalid name as a usage error', async () => {
    expect((await cli(['leader', '--members', members]).done).code).toBe(64);
    const braces = await leader('a{b');
    expect(braces.code).toBe(64);
    expect(braces.stderr).toMatch(/must not contain \{ or \}/);
  });
});

describe('elect after a majority lost its data', () => {
  // Last in the file: it leaves two members restarted empty.
  it('says that no term can be issued and names restore-fencing; once run, it leads with a term above the floor', async () => {
    await Promise.all([t.masters[1]!.restart(), t.masters[2]!.restart()]);
    // A quarantine of 1 s: past it the two count for the lock, but their fence counters are gone.
    const candidate = elect('elect-unfenced', '1s', LEADER_SCRIPT, ['--json', '--max-lock-ttl', '1s']);
    try {
      const unfenced = await waitForEvent(candidate, (event) => event.event === 'waiting' && event.cause === 'unfenced');
      expect(unfenced).toMatchObject({ reason: expect.stringMatching(/without a trusted fence counter .* run quorumlock restore-fencing --floor N/) });
      const restored = await cli(['restore-fencing', '--floor', '1000', '--members', members]).done;
      expect(restored.code).toBe(0);
      await candidate.waitFor('leading');
      expect(termsOf(candidate.stdout)[0]!.term).toBeGreaterThan(1000);
    } finally {
      candidate.child.kill('SIGTERM');
      await candidate.done;
    }
  });
});
