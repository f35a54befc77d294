/**
 * The web console under test: a fresh store (SQLite file or PostgreSQL schema) seeded
 * with done, dead and ready messages, and a console serving it on 127.0.0.1 with a free
 * port. Shared by the HTTP tests and the browser tests.
 */

import { startConsole } from '@onceq/console';
import { enqueue, work } from '@onceq/core';
import { handlers } from '@onceq/handler';
import { type BackendFactory, batch, line, paid, type TestClock, testClock } from './factories.ts';

/** A plausible "now", so times read like real ones. */
export const CONSOLE_T0 = 1_796_025_600;

/**
 * Seed: E0001 book and E0002 pen done; E0003 and E0004 toy dead under v1 (v2 accepts
 * them); E0005 book 0 cents dead (v2 still rejects); E0006 a float amount `10000.0`
 * dead; E0007 done with a secret-looking field and markup in a note; E1000–E1059 ready.
 */
export const SEED_LINES: readonly string[] = [
  line('E0001', paid('book', 10000)),
  line('E0002', paid('pen', 2000)),
  line('E0003', paid('toy', 3000)),
  line('E0004', paid('toy', 4000)),
  line('E0005', paid('book', 0)),
  line('E0006', '{"category":"book","amount_cents":10000.0}'),
  line('E0007', {
    category: 'bag',
    amount_cents: 500,
    email: 'alice@example.com',
    note: '<script>alert(1)</script>',
  }),
];

export const DEAD_IDS = ['E0003', 'E0004', 'E0005', 'E0006'];
export const READY_COUNT = 60;

export interface ConsoleFixture {
  url: string;
  token: string | null;
  /** Every line the console logged (writes, sign-ins). */
  logs: string[];
  store: Awaited<ReturnType<BackendFactory['open']>>['store'];
  /** The store's target as a child process would open it. */
  target: string;
  /** The model clock of the store (and of the console's sign-in limit). */
  clock: TestClock;
  stop(): Promise<void>;
}

export interface FixtureOptions {
  allowWrites?: boolean;
  token?: string;
  hideFields?: string[];
}

export async function consoleFixture(
  factory: BackendFactory,
  options: FixtureOptions = {},
): Promise<ConsoleFixture> {
  const clock = testClock(CONSOLE_T0);
  const opened = await factory.open(clock);
  const { store } = opened;
  await enqueue(store, batch(...SEED_LINES));
  await work(store, handlers.v1);
  clock.advance(60);
  const ready: string[] = [];
  for (let i = 0; i < READY_COUNT; i++)
    ready.push(line(`E1${String(i).padStart(3, '0')}`, paid('pen', 100 + i)));
  await enqueue(store, batch(...ready));
  clock.advance(30);
  const logs: string[] = [];
  const running = startConsole({
    store,
    port: 0,
    allowWrites: options.allowWrites ?? false,
    token: options.token ?? null,
    hideFields: options.hideFields ?? [],
    log: (l) => logs.push(l),
  });
  return {
    url: running.url,
    token: running.token,
    logs,
    store,
    target: opened.target,
    clock,
    async stop() {
      try {
        await running.stop();
      } finally {
        await opened.cleanup();
      }
    },
  };
}

/** How many rows of messages a page shows (one link per row to the detail page). */
export function rowIds(body: string): string[] {
  return [...body.matchAll(/<td class="mono"><a href="\/messages\/([^"]+)">/g)].map(
    (m) => m[1] as string,
  );
}
