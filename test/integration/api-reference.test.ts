/**
 * The generated API reference (typedoc.json, `npm run docs`): converted in memory, never written.
 * Redlock and the other entry points carry their own summary (not a file's header comment, nor
 * nothing), and what is @internal or not exported from src/index.ts does not show.
 */
import { Application, ReflectionKind, type DeclarationReflection, type ProjectReflection } from 'typedoc';
import { beforeAll, expect, it } from 'vitest';

let project: ProjectReflection;
beforeAll(async () => {
  // Reads typedoc.json, as `npm run docs` does.
  const app = await Application.bootstrapWithPlugins({});
  const converted = await app.convert();
  if (!converted) throw new Error('typedoc could not convert src/index.ts');
  project = converted;
}, 60_000);

function summaryOf(name: string): string {
  const reflection = project.getChildByName(name) as DeclarationReflection | undefined;
  if (!reflection) throw new Error(`${name} is not in the API reference`);
  const comment = reflection.comment ?? reflection.signatures?.[0]?.comment;
  return (comment?.summary ?? []).map((part) => part.text).join('');
}

it('exports sit at the top level of the reference, not under an "index" module', () => {
  expect(project.getChildrenByKind(ReflectionKind.Module)).toEqual([]);
  expect(project.getChildByName('Redlock')?.kind).toBe(ReflectionKind.Class);
});

it('Redlock, Lock and the errors each have their own summary', () => {
  expect(summaryOf('Redlock')).toMatch(/^A Redlock client: quorum locks across N independent Redis masters/);
  expect(summaryOf('Lock')).toMatch(/^A held lock: what it covers/);
  expect(summaryOf('LockAcquireError')).toMatch(/could not lock the resources/);
  for (const name of [
    'RedlockOptions',
    'AcquireOptions',
    'UsingOptions',
    'ReleaseResult',
    'LostMessage',
    'ReleaseMessage',
    'AcquireEndMessage',
    'subscribeChannel',
  ])
    expect(summaryOf(name), name).not.toBe('');
});

it('leaves out @internal members and what src/index.ts does not export', () => {
  const names = new Set(Object.values(project.reflections).map((reflection) => reflection.name));
  for (const hidden of ['contextOf', 'internals', 'HeldLock', 'LockContext', 'checkSettings', 'checkOptionNames', 'argumentError', 'tracing', 'traced'])
    expect(names.has(hidden), hidden).toBe(false);
  // Lock's constructor is @internal (Redlock makes locks), and Lock is exported as a type.
  const lock = project.getChildByName('Lock') as DeclarationReflection;
  expect(lock.children?.map((child) => child.name)).not.toContain('constructor');
});
