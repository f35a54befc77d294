import { BatchRejectedError, OnceqError } from '@onceq/core';
import { MAX_BATCH_BYTES, MAX_BATCH_LINES } from '@onceq/core/internal';
import { redactUrl } from '@onceq/core/postgres';
import { thousands } from './output.ts';

/** A mistake in how onceq was called (flag, argument, config file): exit code 2. */
export class UsageError extends Error {
  readonly exitCode = 2;
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The user pressed Ctrl-C (or Esc) in a prompt: exit code 130, like a shell's SIGINT. */
export class CancelledError extends Error {
  readonly exitCode = 130;
  constructor(message = 'cancelled') {
    super(message);
    this.name = 'CancelledError';
  }
}

/** What a failure looks like: the exit code, lines for stderr, one document for `--json`. */
export interface DescribedError {
  exitCode: number;
  lines: string[];
  /** The document `--json` prints on stdout: `{"error": {code, message, exit_code, …}}`. */
  json: Record<string, unknown>;
}

/**
 * The process boundary: turns any error into its exit code and the lines to print on
 * stderr. Known errors become one sentence (a rejected batch adds one line per issue);
 * anything else is an internal error (exit 1). The stack only with `ONCEQ_DEBUG=1`.
 * Every `postgres://` URL in a foreign message goes through core's `redactUrl`.
 */
export function describeError(error: unknown, debug: boolean): DescribedError {
  const lines: string[] = [];
  let exitCode: number;
  let code: string;
  let extra: Record<string, unknown> = {};
  if (error instanceof BatchRejectedError) {
    exitCode = error.exitCode;
    code = error.code;
    const n = error.problems;
    lines.push(
      `onceq: batch rejected, nothing was written (${n} ${n === 1 ? 'problem' : 'problems'}):`,
    );
    for (const issue of error.issues) {
      const reason = thousands(issue.reason);
      lines.push(issue.line > 0 ? `  line ${issue.line}: ${reason}` : `  ${reason}`);
    }
    if (error.issues.some((i) => i.line === 0 && /limit is/.test(i.reason))) {
      lines.push(
        `  hint: a batch holds at most ${MAX_BATCH_LINES.toLocaleString('en-US')} lines and ${MAX_BATCH_BYTES.toLocaleString('en-US')} bytes; enqueue a larger file with onceq enqueue --split FILE, or cut it with split -l ${MAX_BATCH_LINES} FILE part-`,
      );
    }
    extra = {
      problems: n,
      issues: error.issues.map((i) => ({ line: i.line, reason: i.reason })),
    };
  } else if (
    error instanceof OnceqError ||
    error instanceof UsageError ||
    error instanceof CancelledError
  ) {
    exitCode = error.exitCode;
    code =
      error instanceof OnceqError
        ? error.code
        : error instanceof UsageError
          ? 'usage'
          : 'cancelled';
    lines.push(`onceq: ${oneLine(error.message)}`);
  } else {
    exitCode = 1;
    code = 'internal';
    const message = error instanceof Error ? error.message : String(error);
    lines.push(
      debug
        ? `onceq: internal error: ${oneLine(message)}`
        : `onceq: internal error: ${oneLine(message)} (set ONCEQ_DEBUG=1 for the stack)`,
    );
  }
  if (debug && error instanceof Error && error.stack) lines.push(error.stack);
  // onceq's own messages name a store only through redactUrl / describeTarget; a foreign
  // message (an internal error, a stack) may quote a URL, so it goes through redact.
  const safe = code === 'internal' || debug ? lines.map(redact) : lines;
  const message = (safe[0] ?? '').replace(/^onceq: /, '');
  return {
    exitCode,
    lines: safe,
    json: { error: { code, exit_code: exitCode, message, ...extra } },
  };
}

/**
 * `text` with core's `redactUrl` applied from each `postgres://` to the end of its line.
 * A password may hold a quote or a space, so no character can be trusted to end the URL
 * inside a sentence; `redactUrl` hides up to the line's last `@`, which over-hides at
 * worst.
 */
export function redact(text: string): string {
  return text.replace(/postgres(?:ql)?:\/\/[^\n]*/gi, (url) => redactUrl(url));
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
