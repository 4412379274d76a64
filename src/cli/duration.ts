import { UsageError } from './errors.js';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * `500ms`, `30s`, `1.5s`, `2m`, `1h`, or plain milliseconds (`250`) → integer ms.
 * Throws a UsageError naming `flag` for anything else, and for values that are not whole ms.
 */
export function parseDuration(flag: string, text: string, { allowZero = false } = {}): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  const hint = 'use e.g. 500ms, 30s, 2m, 1h or plain milliseconds';
  if (!match) throw new UsageError(`${flag}: "${text}" is not a duration (${hint})`, flag);
  const ms = Number(match[1]) * UNITS[match[2] ?? 'ms']!;
  if (!Number.isSafeInteger(ms) || ms > 2_147_483_647)
    throw new UsageError(`${flag}: "${text}" must be a whole number of milliseconds, at most 2147483647 (${hint})`, flag);
  if (ms === 0 && !allowZero) throw new UsageError(`${flag}: must be larger than 0, got "${text}"`, flag);
  return ms;
}

/** 3200 → "3.2 s", 850 → "850 ms", 125000 → "2 m 5 s". */
export function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const total = Math.round(ms / 1000);
  if (total < 3600) return `${Math.floor(total / 60)} m ${total % 60} s`;
  return `${Math.floor(total / 3600)} h ${Math.floor((total % 3600) / 60)} m`;
}
