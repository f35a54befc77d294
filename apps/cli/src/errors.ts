import { BatchRejectedError, OnceqError } from '@onceq/core';

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

/**
 * The process boundary: turns any error into its exit code and the lines to print on
 * stderr. Known errors become one sentence (a rejected batch adds one line per issue);
 * anything else is an internal error (exit 1). The stack only with `ONCEQ_DEBUG=1`.
 */
export function describeError(
  error: unknown,
  debug: boolean,
  secrets: readonly string[] = [],
): { exitCode: number; lines: string[] } {
  const lines: string[] = [];
  let exitCode: number;
  if (error instanceof BatchRejectedError) {
    exitCode = error.exitCode;
    const n = error.issues.length;
    lines.push(
      `onceq: batch rejected, nothing was written (${n} ${n === 1 ? 'problem' : 'problems'}):`,
    );
    for (const issue of error.issues) {
      lines.push(issue.line > 0 ? `  line ${issue.line}: ${issue.reason}` : `  ${issue.reason}`);
    }
  } else if (
    error instanceof OnceqError ||
    error instanceof UsageError ||
    error instanceof CancelledError
  ) {
    exitCode = error.exitCode;
    lines.push(`onceq: ${oneLine(error.message)}`);
  } else {
    exitCode = 1;
    const message = error instanceof Error ? error.message : String(error);
    lines.push(
      debug
        ? `onceq: internal error: ${oneLine(message)}`
        : `onceq: internal error: ${oneLine(message)} (set ONCEQ_DEBUG=1 for the stack)`,
    );
  }
  if (debug && error instanceof Error && error.stack) lines.push(error.stack);
  return { exitCode, lines: lines.map((line) => redact(line, secrets)) };
}

/** Replaces every secret (a PostgreSQL password) in `text` with `***`. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret.length > 0) out = out.split(secret).join('***');
  // Belt and braces: any URL credentials that slipped through.
  return out.replace(/(postgres(?:ql)?:\/\/[^:/@\s]*):[^@\s]*@/gi, '$1:***@');
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
