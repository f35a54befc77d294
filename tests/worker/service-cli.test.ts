// The service's small CLI pieces: `onceq extend` (exit 4 when refused) and `onceq work`
// saying why nothing is claimable, on the model clock.
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CliSandbox, cliSandbox, json } from '../support/cli.ts';

// Real processes on a shared, loaded machine: a generous bound (every wait is for a condition).
setDefaultTimeout(120_000);

describe('onceq extend and work', () => {
  let box: CliSandbox;
  beforeEach(() => {
    box = cliSandbox();
    writeFileSync(
      join(box.cwd, 'two.jsonl'),
      [
        '{"event_id":"E0001","payload":{"category":"book","amount_cents":100}}',
        '{"event_id":"E0002","payload":{"category":"pen","amount_cents":5}}',
      ].join('\n'),
    );
  });
  afterEach(() => box.cleanup());
  const at = (now: number, ...args: string[]) => box.run([...args, '--now', String(now)]);

  test('extend renews a held lease and refuses a stale generation or an expired lease with exit 4', async () => {
    expect((await at(1000, 'enqueue', 'two.jsonl')).code).toBe(0);
    expect((await at(1000, 'claim', '--lease', '5')).code).toBe(0); // E0001 g1, until 1005
    const extended = await at(
      1004,
      'extend',
      'E0001',
      '--generation',
      '1',
      '--lease',
      '60',
      '--json',
    );
    expect(extended.code).toBe(0);
    expect(json(extended)).toEqual({ event_id: 'E0001', generation: 1, lease_until: 1064 });
    const stale = await at(1004, 'extend', 'E0001', '--generation', '0');
    expect(stale.code).toBe(4);
    expect(stale.stderr).toBe(
      'onceq: lease lost for E0001 generation 0: the message is at generation 1, a newer claim owns it\n',
    );
    const expired = await at(1064, 'extend', 'E0001', '--generation', '1');
    expect(expired.code).toBe(4);
    expect(expired.stderr).toContain('the lease expired at 1064 (now 1064)');
    const usage = await at(1004, 'extend', 'E0001');
    expect(usage.code).toBe(2);
  });

  test('work says which messages wait and until when when nothing is claimable', async () => {
    expect((await at(1000, 'enqueue', 'two.jsonl')).code).toBe(0);
    expect((await at(1000, 'claim', '--lease', '30')).code).toBe(0); // E0001 held until 1030
    expect((await at(1000, 'claim')).code).toBe(0); // E0002 g1
    expect((await at(1000, 'fail', 'E0002', '--generation', '1', '--temporary')).code).toBe(0);
    const human = await at(1000, 'work');
    expect(human.code).toBe(0);
    const [first, second] = human.stdout.split('\n');
    expect(first).toBe('nothing to claim now');
    expect(second).toMatch(
      /^1 message in backoff, ready at \d\d:\d\d:\d\d \(in 1 s\); 1 message leased, the first lease ends at \d\d:\d\d:\d\d \(in 30 s\)$/,
    );
    const machine = json<{ claimed: number; waiting: unknown }>(await at(1000, 'work', '--json'));
    expect(machine).toMatchObject({
      claimed: 0,
      waiting: { in_backoff: 1, next_ready_at: 1001, leased: 1, next_lease_expiry: 1030 },
    });
  });
});
