import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { WIRE_PROTOCOL } from '../../src/index.js';

// The CHANGELOG's newest release is the package's version and names the wire protocol this code
// speaks (src/store/protocol.ts, WIRE_PROTOCOL): raising one without the other fails here.
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('CHANGELOG.md', () => {
  const changelog = read('CHANGELOG.md');
  const newest = /^## \[(\d+\.\d+\.\d+)\][^\n]*\n+Wire protocol (\d+)\./m.exec(changelog);

  it("opens with package.json's version and the wire protocol the code speaks", () => {
    const { version } = JSON.parse(read('package.json')) as { version: string };
    expect(newest?.slice(1)).toEqual([version, String(WIRE_PROTOCOL)]);
  });

  it('names a wire protocol for every release', () => {
    const releases = [...changelog.matchAll(/^## \[?(\d+\.\d+\.\d+)\]?.*\n+(.*)/gm)];
    expect(releases.length).toBeGreaterThan(1);
    for (const [, release, first] of releases) expect(first, release).toMatch(/^Wire protocol \d+\./);
  });
});
