/**
 * `onceq redrive --accepted-by <handler>`: one command redrives exactly the dead messages
 * the handler now accepts (the dry run's "would be accepted" set); the rest stay dead.
 * And `--handler` without `--dry-run` is refused with a sentence that says what to use.
 */
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CliResult, type CliSandbox, cliSandbox, DEMO_JSONL, json } from '../support/cli.ts';

setDefaultTimeout(120_000);

interface Status {
  messages: { ready: number; leased: number; done: number; dead: number };
  total: number;
}

function ok(result: CliResult): CliResult {
  if (result.code !== 0) throw new Error(`exit ${result.code}: ${result.stderr}`);
  return result;
}

describe('redrive --accepted-by', () => {
  let box: CliSandbox;
  const at = (now: number, ...args: string[]) => box.run([...args, '--now', String(now)]);
  const status = async () => json<Status>(ok(await at(1003, 'status', '--json')));

  beforeEach(async () => {
    box = cliSandbox();
    // The demo's five lines plus a hat, which no version knows: v1 leaves E0004 (toy)
    // and E0005 (hat) dead.
    const hat = '{"event_id":"E0005","payload":{"category":"hat","amount_cents":700}}\n';
    writeFileSync(join(box.cwd, 'in.jsonl'), `${await Bun.file(DEMO_JSONL).text()}${hat}`);
    ok(await at(1000, 'enqueue', 'in.jsonl'));
    for (const now of [1000, 1001, 1002]) ok(await at(now, 'work', '--handler', 'v1'));
    expect((await status()).messages).toEqual({ ready: 0, leased: 0, done: 3, dead: 2 });
  });
  afterEach(() => box.cleanup());

  test('redrives exactly the dry run\'s "would be accepted" set, in one command', async () => {
    const dry = json<{ messages: { event_id: string; accepted: boolean }[] }>(
      ok(await at(1003, 'redrive', '--all', '--dry-run', '--handler', 'v2', '--json')),
    );
    const wouldBeAccepted = dry.messages.filter((m) => m.accepted).map((m) => m.event_id);
    expect(wouldBeAccepted).toEqual(['E0004']);

    const r = json(ok(await at(1003, 'redrive', '--all', '--accepted-by', 'v2', '--json')));
    expect(r).toEqual({
      handler: 'v2',
      redriven: wouldBeAccepted,
      still_dead: [
        {
          event_id: 'E0005',
          code: 'invalid_payload',
          detail: 'category "hat" is not known to handler v2 (book, pen, bag, toy)',
        },
      ],
    });
    expect((await status()).messages).toEqual({ ready: 1, leased: 0, done: 3, dead: 1 });
    ok(await at(1003, 'work', '--handler', 'v2'));
    expect(await status()).toMatchObject({ messages: { done: 4, dead: 1 }, total: 20000 });
  });

  test('says what it did in words; ids narrow the selection; none accepted moves nothing', async () => {
    const words = ok(await at(1003, 'redrive', 'E0004', 'E0005', '--accepted-by', 'v2'));
    expect(words.stdout).toBe(
      'redriven 1 accepted by v2: E0004; 1 message v2 still rejects stay dead\n',
    );
    const none = ok(await at(1003, 'redrive', 'E0005', '--accepted-by', 'v1'));
    expect(none.stdout).toBe('nothing redriven: v1 accepts none of the 1 dead message\n');
    expect((await status()).messages).toEqual({ ready: 1, leased: 0, done: 3, dead: 1 });
  });

  test('--handler without --dry-run, and --accepted-by with --dry-run: usage errors, nothing changed', async () => {
    const handler = await at(1003, 'redrive', '--all', '--handler', 'v2');
    expect([handler.code, handler.stdout, handler.stderr]).toEqual([
      2,
      '',
      'onceq: --handler only applies with --dry-run (a redrive itself runs no handler); to redrive only the messages v2 now accepts, use --accepted-by v2\n',
    ]);
    const both = await at(1003, 'redrive', '--all', '--dry-run', '--accepted-by', 'v2');
    expect([both.code, both.stderr]).toEqual([
      2,
      'onceq: --accepted-by redrives; to preview, use --dry-run --handler without --accepted-by\n',
    ]);
    const unknown = await at(1003, 'redrive', '--all', '--accepted-by', 'v9');
    expect([unknown.code, unknown.stderr]).toEqual([
      2,
      'onceq: --accepted-by must be one of v1, v2 or the path of a handler module (./my-handler.ts), got "v9"\n',
    ]);
    expect((await status()).messages).toEqual({ ready: 0, leased: 0, done: 3, dead: 2 });
  });
});
