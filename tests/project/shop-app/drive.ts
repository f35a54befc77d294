/**
 * The shop's check: `bun drive.ts PAYMENTS REPEATS` with ONCEQ_DB set. Starts the
 * endpoint and a v1 worker, posts the payments (some twice) while SIGKILLing the worker
 * twice, waits until nothing is ready or leased, upgrades to v2 and redrives the dead
 * (the GBP payments v1 refuses), then prints one JSON line: what the tables hold against
 * what was sent.
 */
import { dlq, openStore, redrive, status, transaction } from '@onceq/core';

const payments = Number(process.argv[2] ?? 2000);
const repeats = Number(process.argv[3] ?? 300);
const env = { ...process.env };
const currencies = ['EUR', 'USD', 'GBP'];

function payment(i: number) {
  return {
    id: `pay_${String(i).padStart(6, '0')}`,
    order_id: `order-${i}`,
    account: `acct-${i % 7}`,
    amount_cents: 100 + ((i * 37) % 9000),
    currency: currencies[i % currencies.length] as string,
  };
}

/** Starts `bun file args…` and resolves with its first line on stdout (server) or once it logs `started` (worker). */
async function start(args: string[], ready: RegExp) {
  const proc = Bun.spawn(['bun', ...args], { env, stdout: 'pipe', stderr: 'pipe' });
  let seen = '';
  const decoder = new TextDecoder();
  const streams = [proc.stdout.getReader(), proc.stderr.getReader()];
  await new Promise<void>((resolve, reject) => {
    for (const reader of streams) {
      (async () => {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          seen += decoder.decode(value);
          if (ready.test(seen)) resolve();
        }
      })();
    }
    proc.exited.then((code) => reject(new Error(`${args.join(' ')} exited ${code}: ${seen}`)));
  });
  return { proc, output: () => seen };
}

const server = await start(['server.ts'], /http:\/\/127\.0\.0\.1:\d+\//);
const url = /http:\/\/127\.0\.0\.1:\d+\//.exec(server.output())?.[0] as string;
let worker = await start(['worker.ts', './handler-v1.ts'], /started/);

const sends = [
  ...Array.from({ length: payments }, (_, i) => i + 1),
  ...Array.from({ length: repeats }, (_, i) => 1 + ((i * 7919) % payments)),
];
let posted = 0;
let kills = 0;
async function post(i: number) {
  const response = await fetch(url, { method: 'POST', body: JSON.stringify(payment(i)) });
  if (!response.ok) throw new Error(`payment ${i}: HTTP ${response.status}`);
  posted++;
}
for (let at = 0; at < sends.length; at += 16) {
  await Promise.all(sends.slice(at, at + 16).map(post));
  if (kills < 2 && posted >= ((kills + 1) * sends.length) / 3) {
    worker.proc.kill('SIGKILL');
    await worker.proc.exited;
    kills++;
    worker = await start(['worker.ts', './handler-v1.ts'], /started/);
  }
}

const store = await openStore(env.ONCEQ_DB ?? './shop.db');
/** Waits until nothing is ready or leased: every payment done or dead (at most 5 minutes). */
async function drained() {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const { messages } = await status(store);
    if (messages.ready === 0 && messages.leased === 0) return;
    if (Date.now() > deadline) throw new Error(`not drained: ${JSON.stringify(messages)}`);
    await Bun.sleep(200);
  }
}
await drained();
worker.proc.kill('SIGTERM');
const v1Exit = await worker.proc.exited;
const deadBefore = (await dlq(store)).length;

worker = await start(['worker.ts', './handler-v2.ts'], /started/);
const redriven = (await redrive(store, 'all')).length;
await drained();
worker.proc.kill('SIGTERM');
const v2Exit = await worker.proc.exited;
server.proc.kill('SIGTERM');
await server.proc.exited;

const expected = new Map<string, number>();
for (let i = 1; i <= payments; i++) {
  const p = payment(i);
  expected.set(p.account, (expected.get(p.account) ?? 0) + p.amount_cents);
}
const tables = await transaction(store, async (tx) => {
  const one = async (sql: string) => (await tx.query(sql)).rows;
  return {
    orders: Number((await one('SELECT count(*) AS n FROM orders'))[0]?.n),
    ledger: Number((await one('SELECT count(*) AS n FROM ledger'))[0]?.n),
    ledgerEvents: Number((await one('SELECT count(DISTINCT event_id) AS n FROM ledger'))[0]?.n),
    balances: Object.fromEntries(
      (await one('SELECT account, amount_cents FROM balances ORDER BY account')).map((r) => [
        String(r.account),
        Number(r.amount_cents),
      ]),
    ),
  };
});
const final = await status(store);
await store.close();
console.log(
  JSON.stringify({
    sent: sends.length,
    payments,
    kills,
    v1Exit,
    v2Exit,
    deadBefore,
    redriven,
    messages: final.messages,
    ...tables,
    balancesExact:
      JSON.stringify(tables.balances) ===
      JSON.stringify(Object.fromEntries([...expected].sort(([a], [b]) => a.localeCompare(b)))),
  }),
);
