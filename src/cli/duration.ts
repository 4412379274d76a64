import { UsageError } from './errors.js';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

const HINT = 'use e.g. 500ms, 30s, 1.5s, 2m or 1h';

/**
 * `500ms`, `30s`, `1.5s`, `2m`, `1h` → integer ms. A number without a unit is refused (is
 * `--ttl 300` 300 ms or 300 s?), except `0`, which is zero in every unit. Throws a UsageError
 * naming `flag` for anything else, and for values that are not whole ms.
 */
export function parseDuration(flag: string, text: string, { allowZero = false } = {}): number {
  const trimmed = text.trim();
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(trimmed);
  if (!match) throw new UsageError(`${flag}: "${text}" is not a duration (${HINT})`, flag);
  const [, amount = '', unit] = match;
  if (unit === undefined && Number(amount) !== 0)
    throw new UsageError(`${flag}: "${text}" has no unit: write ${amount}ms or ${amount}s (durations: ${HINT})`, flag);
  const ms = Number(amount) * UNITS[unit ?? 'ms']!;
  if (!Number.isSafeInteger(ms) || ms > 2_147_483_647)
    throw new UsageError(`${flag}: "${text}" must be a whole number of milliseconds, at most 2147483647 (${HINT})`, flag);
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
