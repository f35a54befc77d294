import { OnceqError } from '@onceq/core';

/**
 * A request the console refuses, with the HTTP status it answers and, for a bad
 * parameter, the field at fault (the page shows the message next to that field).
 */
export class ConsoleRequestError extends OnceqError {
  readonly status: number;
  readonly field: string | null;
  /** Extra response headers (`retry-after` on a 429). */
  readonly headers: Record<string, string>;
  constructor(
    status: number,
    code: string,
    message: string,
    field: string | null = null,
    headers: Record<string, string> = {},
  ) {
    super(code, status === 400 ? 2 : 4, message);
    this.status = status;
    this.field = field;
    this.headers = headers;
  }
}

/** A bad query or form parameter: 400, shown next to `field`. */
export function badParam(field: string, message: string): ConsoleRequestError {
  return new ConsoleRequestError(400, 'bad_parameter', message, field);
}

/** A refused request (read-only console, missing sign-in, failed CSRF or origin check): 403. */
export function forbidden(code: string, message: string): ConsoleRequestError {
  return new ConsoleRequestError(403, code, message);
}
