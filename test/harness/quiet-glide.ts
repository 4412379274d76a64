/**
 * Valkey GLIDE's core logs to the console at 'warn' by default: every deliberate kill, pause and
 * close in these tests would print lines that say nothing a test does not check. Off unless
 * QUORUMLOCK_GLIDE_LOG names a level ('error', 'warn', 'info', 'debug'), for a failure's details.
 */
import { Logger } from '@valkey/valkey-glide';

type Level = Parameters<typeof Logger.setLoggerConfig>[0];
Logger.setLoggerConfig((process.env.QUORUMLOCK_GLIDE_LOG as Level | undefined) ?? 'off');
