/**
 * What every child process of the conformance suite shares: its argv and how it opens
 * the parent's store. Children take `--target <path|url> [--schema s] --now <seconds>`
 * and only the clock is modelled; the store, the process and its exit are real.
 */
import { parseArgs } from 'node:util';
import { openStore, type Store } from '@onceq/core';
import { modelClock } from '@onceq/core/internal';

export interface ChildOptions {
  target: string;
  schema: string | undefined;
  now: number;
  lease: number | undefined;
  expect: string | undefined;
  handler: string | undefined;
  /** Wall-clock epoch milliseconds at which concurrent children start working together. */
  startAt: number | undefined;
}

export function childOptions(): ChildOptions {
  const { values } = parseArgs({
    args: Bun.argv.slice(2),
    options: {
      target: { type: 'string' },
      schema: { type: 'string' },
      now: { type: 'string' },
      lease: { type: 'string' },
      expect: { type: 'string' },
      handler: { type: 'string' },
      'start-at': { type: 'string' },
    },
    strict: true,
  });
  if (values.target === undefined || values.now === undefined) {
    die('usage: --target <path|url> [--schema s] --now <seconds> …');
  }
  const int = (text: string | undefined) => (text === undefined ? undefined : Number(text));
  return {
    target: values.target,
    schema: values.schema,
    now: Number(values.now),
    lease: int(values.lease),
    expect: values.expect,
    handler: values.handler,
    startAt: int(values['start-at']),
  };
}

export function openChildStore(options: ChildOptions): Promise<Store> {
  return openStore(options.target, {
    clock: modelClock(options.now),
    ...(options.schema === undefined ? {} : { schema: options.schema }),
  });
}

/** Lines concurrent children up on one wall-clock instant, so that they really overlap. */
export async function waitForStart(options: ChildOptions): Promise<void> {
  if (options.startAt !== undefined) await Bun.sleep(Math.max(0, options.startAt - Date.now()));
}

export function die(message: string, code = 2): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}
