/**
 * The worker's log: one line per batch and per notable event (start, stop, lease lost,
 * release, DLQ, wake-up fallback). Human lines by default, JSON lines for log shippers.
 * Fields are the worker's own values (ids, counts, the store's redacted location): a
 * PostgreSQL password never reaches them.
 */
import { printable } from '../printable.ts';

export const LOG_FORMATS = ['human', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export type LogFields = Readonly<Record<string, string | number | boolean | null>>;

export interface WorkerLog {
  /** `event` is a stable short name (`start`, `batch`, `lease_lost`, …); `message` is for people. */
  write(event: string, message: string, fields?: LogFields): void;
}

/** A log that drops everything (the library default). */
export const silentLog: WorkerLog = { write() {} };

/**
 * A log writing one line per event through `out` (default: stderr, so stdout stays free
 * for a command's result). `now` gives the timestamp (default: the wall clock).
 */
export function createLog(
  format: LogFormat,
  out: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
  now: () => Date = () => new Date(),
): WorkerLog {
  return {
    write(event, message, fields = {}) {
      const time = now().toISOString();
      if (format === 'json') {
        // JSON.stringify escapes every control character: one event is one line.
        out(JSON.stringify({ time, event, message, ...fields }));
      } else {
        // A message may quote what a handler threw, and so a payload value: escaped, it can
        // neither forge a log line nor make one read backwards.
        out(`${time} ${printable(event)}: ${printable(message)}`);
      }
    },
  };
}
