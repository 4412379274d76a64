/**
 * Whether `run` can start a command (src/cli/command-path.ts), on files made here: no server.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { unstartable } from '../../src/cli/command-path.js';

const dir = mkdtempSync(join(tmpdir(), 'quorumlock-command-path-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const script = (name: string, text: string, mode = 0o755): string => {
  const path = join(dir, name);
  writeFileSync(path, text, { mode });
  return path;
};

describe('unstartable', () => {
  it('reads the #! interpreter as the kernel does: spaces and tabs skipped, a \\r kept, a name the 256-byte buffer cut off not judged', () => {
    expect(unstartable(script('ok.sh', '#!/bin/sh\necho\n'), {})).toBeUndefined();
    expect(unstartable(script('spaced.sh', '#! \t/bin/sh -e\necho\n'), {})).toBeUndefined();
    expect(unstartable(script('missing.sh', '#!/nonexistent/sh\n'), {})).toEqual({
      code: 126,
      why: 'bad interpreter "/nonexistent/sh": not found or not executable',
    });
    expect(unstartable(script('crlf.sh', '#!/bin/sh\r\necho\r\n'), {})?.why).toBe(
      'bad interpreter "/bin/sh\\r": not found or not executable (the script\'s lines end in CRLF)',
    );
    expect(unstartable(script('long.sh', `#!/${'x'.repeat(300)}\n`), {})).toBeUndefined();
    expect(unstartable(script('plain', 'echo no shebang\n'), {})).toBeUndefined();
  });

  it('says 127 for a name nowhere on PATH, 126 for a file not executable', () => {
    expect(unstartable('quorumlock-no-such-command', { PATH: dir })).toEqual({ code: 127, why: 'command not found' });
    script('not-executable', '#!/bin/sh\n', 0o644);
    expect(unstartable('not-executable', { PATH: dir })).toEqual({ code: 126, why: 'permission denied' });
  });
});
