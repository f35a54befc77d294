/**
 * The worker's log: one line per batch and per notable event (start, stop, lease lost,
 * release, DLQ, wake-up fallback). Human lines by default, JSON lines for log shippers.
 * Fields are the worker's own values (ids, counts, the store's redacted location): a
 * PostgreSQL password never reaches them.
 */
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
        out(`${time} ${escapeControls(event)}: ${escapeControls(message)}`);
      }
    },
  };
}

/**
 * Control characters (C0, DEL, C1), line and paragraph separators and the Unicode bidi
 * controls, written as visible escapes (`\n`, `\u202e`). A message may quote what a
 * handler threw, and so a payload value: with its newline kept, a payload could forge a
 * whole log line (`…\n2026-01-01T00:00:00.000Z batch: claimed 100: 100 done`), with a
 * bidi override it could make a line read backwards.
 */
export function escapeControls(text: string): string {
  return text.replace(
    CONTROLS,
    (c) => ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

const CONTROLS =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point.
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
