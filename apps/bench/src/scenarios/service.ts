/**
 * The long-running worker against `work --batch`, in one process per store:
 *
 * - throughput: `Worker` (drain mode, handler outside the transaction, fenced ACK) vs
 *   `work()` (handler inside apply) at the same batch, v1 handler, same messages;
 * - concurrency: a handler that awaits 10 ms, `concurrency` 8 vs 1;
 * - wake-up latency: an idle worker, one message enqueued (by a second store handle, so
 *   on PostgreSQL through NOTIFY), time from the enqueue's COMMIT to the handler call;
 * - idle CPU: a worker with nothing to do for a few seconds, CPU time / wall time.
 */
import { join } from 'node:path';
import { enqueue, openStore, type Store, status, Worker, work } from '@onceq/core';
import { handlers } from '@onceq/handler';
import { dropSchema } from '../raw-db.ts';
import { section, table } from '../report.ts';
import { batches, fmtMs, fmtRate, line, percentile, removeDb } from '../util.ts';

export interface ServiceResult {
  backend: 'sqlite' | 'pg';
  batch: number;
  messages: number;
  workRate: number;
  workerRate: number;
  concurrency1Rate: number;
  concurrency8Rate: number;
  wakeP50Ms: number;
  wakeP90Ms: number;
  wakeSamples: number;
  /** Idle CPU of a real `onceq worker` process, % of one core; NaN when not measured. */
  idleCpuPercent: number;
}

type Opener = (
  tag: string,
) => Promise<{ store: Store; reopen: () => Promise<Store>; dispose: () => Promise<void> }>;

export function sqliteOpener(dir: string): Opener {
  return async (tag) => {
    const path = join(dir, `service-${tag}.db`);
    removeDb(path);
    const store = await openStore(path);
    return {
      store,
      reopen: () => openStore(path),
      dispose: async () => {
        await store.close();
        removeDb(path);
      },
    };
  };
}

export function pgOpener(url: string): Opener {
  return async (tag) => {
    const schema = `onceq_bench_service_${tag}_${process.pid}`;
    const store = await openStore(url, { schema });
    return {
      store,
      reopen: () => openStore(url, { schema }),
      dispose: async () => {
        await store.close();
        await dropSchema(url, schema);
      },
    };
  };
}

async function fill(store: Store, count: number): Promise<void> {
  for (const b of batches(count)) await enqueue(store, b);
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

export async function runService(
  backend: 'sqlite' | 'pg',
  open: Opener,
  options: { messages: number; batch: number; log: (s: string) => void; db: string | null },
): Promise<ServiceResult> {
  const { messages, batch, log } = options;
  const v1 = handlers.v1;

  // Throughput: alternate work() and Worker on fresh stores, best of 2 each.
  const rates = { work: [] as number[], worker: [] as number[] };
  for (let round = 0; round < 2; round++) {
    for (const kind of ['work', 'worker'] as const) {
      const s = await open(`${kind}${round}`);
      await fill(s.store, messages);
      const ms = await timed(async () => {
        if (kind === 'work') await work(s.store, v1, { batch });
        else {
          const w = new Worker(s.store, v1, { batch, drain: true });
          await w.start();
          await w.finished();
        }
      });
      if ((await status(s.store)).messages.done !== messages)
        throw new Error(`${kind}: not all done`);
      rates[kind].push(messages / (ms / 1000));
      log(`  ${backend} ${kind} batch ${batch}: ${Math.round(messages / (ms / 1000))} msg/s`);
      await s.dispose();
    }
  }

  // Concurrency with a handler that awaits 10 ms.
  const slow = async (payload: Parameters<typeof v1>[0], ctx: Parameters<typeof v1>[1]) => {
    await Bun.sleep(10);
    return v1(payload, ctx);
  };
  const concurrencyRate: Record<number, number> = {};
  const slowMessages = Math.min(messages, 512);
  for (const concurrency of [1, 8]) {
    const s = await open(`c${concurrency}`);
    await fill(s.store, slowMessages);
    const ms = await timed(async () => {
      // A batch that is a multiple of 8, so the last round of 8 lanes is full.
      const w = new Worker(s.store, slow, { batch: 64, concurrency, drain: true });
      await w.start();
      await w.finished();
    });
    concurrencyRate[concurrency] = slowMessages / (ms / 1000);
    log(
      `  ${backend} 10 ms handler, concurrency ${concurrency}: ${Math.round(concurrencyRate[concurrency])} msg/s`,
    );
    await s.dispose();
  }

  // Wake-up latency and idle CPU.
  const s = await open('wake');
  const producer = backend === 'pg' ? await s.reopen() : s.store;
  let called: (() => void) | undefined;
  const w = new Worker(
    s.store,
    (payload, ctx) => {
      called?.();
      return v1(payload, ctx);
    },
    { batch: 10 },
  );
  await w.start();
  await Bun.sleep(1500); // let the idle poll back off fully
  const latencies: number[] = [];
  for (let i = 0; i < 15; i++) {
    await Bun.sleep(200 + Math.random() * 1300);
    const seen = new Promise<void>((resolve) => {
      called = resolve;
    });
    await enqueue(producer, `${line(9000 + i)}\n`);
    const committed = performance.now();
    await seen;
    latencies.push(performance.now() - committed);
  }
  await w.stop({ timeoutMs: 5000 });
  if (producer !== s.store) await producer.close();
  await s.dispose();
  log(`  ${backend} wake-up p50 ${percentile(latencies, 50).toFixed(1)} ms`);
  const idleCpuPercent = options.db === null ? Number.NaN : await idleWorkerCpu(options.db);
  log(
    Number.isNaN(idleCpuPercent)
      ? `  ${backend} idle onceq worker CPU: not measured (${IDLE_NOT_MEASURED})`
      : `  ${backend} idle onceq worker CPU: ${idleCpuPercent.toFixed(2)} % of a core`,
  );

  return {
    backend,
    batch,
    messages,
    workRate: Math.max(...rates.work),
    workerRate: Math.max(...rates.worker),
    concurrency1Rate: concurrencyRate[1] as number,
    concurrency8Rate: concurrencyRate[8] as number,
    wakeP50Ms: percentile(latencies, 50),
    wakeP90Ms: percentile(latencies, 90),
    wakeSamples: latencies.length,
    idleCpuPercent,
  };
}

const BIN = join(import.meta.dir, '..', '..', '..', 'cli', 'src', 'bin.ts');

/** Why PostgreSQL's idle worker CPU is not measured. */
const IDLE_NOT_MEASURED = 'the CLI worker would use the default schema of that database';

/**
 * CPU of a real idle `onceq worker` process (Linux: /proc/<pid>/stat, utime + stime),
 * measured over 10 s after a 15 s warm-up (start-up, JIT compiling in the background), as
 * % of one core.
 */
async function idleWorkerCpu(db: string): Promise<number> {
  const proc = Bun.spawn(['bun', BIN, 'worker', '--db', db], {
    stdout: 'ignore',
    stderr: 'ignore',
    env: { ...process.env },
  });
  const ticks = async () => {
    const fields =
      (await Bun.file(`/proc/${proc.pid}/stat`).text()).split(') ')[1]?.split(' ') ?? [];
    return Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14, 15)
  };
  try {
    await Bun.sleep(15_000);
    const a = await ticks();
    const t = performance.now();
    await Bun.sleep(10_000);
    const b = await ticks();
    const hz = Number(Bun.spawnSync(['getconf', 'CLK_TCK']).stdout.toString().trim()) || 100;
    return (((b - a) / hz) * 1000 * 100) / (performance.now() - t);
  } finally {
    proc.kill('SIGTERM');
    await proc.exited;
  }
}

/**
 * The whole `service` section: SQLite, then PostgreSQL when `pgUrl` is given; its table
 * lines and its target rows for the bench's report.
 */
export async function measureService(
  scratch: string,
  pgUrl: string | null,
  messages: number,
  log: (s: string) => void,
): Promise<{
  results: ServiceResult[];
  lines: string[];
  targets: { target: string; measured: string; met: boolean | null }[];
}> {
  log('service: worker vs work --batch, concurrency, wake-up, idle CPU …');
  const found: ServiceResult[] = [
    await runService('sqlite', sqliteOpener(scratch), {
      messages,
      batch: 100,
      log,
      db: join(scratch, 'idle.db'),
    }),
  ];
  if (pgUrl !== null) {
    found.push(await runService('pg', pgOpener(pgUrl), { messages, batch: 100, log, db: null }));
  }
  const lines = [
    section(`The long-running worker (${messages} messages, batch 100; see scenarios/service.ts)`),
    table(
      [
        'backend',
        'work msg/s',
        'worker msg/s',
        'c1 (10 ms) msg/s',
        'c8 (10 ms) msg/s',
        'wake p50 / p90 ms',
        'idle CPU %',
      ],
      found.map((r) => [
        r.backend,
        fmtRate(r.workRate),
        fmtRate(r.workerRate),
        fmtRate(r.concurrency1Rate),
        fmtRate(r.concurrency8Rate),
        `${fmtMs(r.wakeP50Ms)} / ${fmtMs(r.wakeP90Ms)}`,
        Number.isNaN(r.idleCpuPercent) ? '-' : r.idleCpuPercent.toFixed(2),
      ]),
    ),
  ];
  const targets = found.flatMap((r) => [
    {
      target: `worker throughput within 10 % of work --batch 100 (${r.backend})`,
      measured: `${fmtRate(r.workerRate)} vs ${fmtRate(r.workRate)} msg/s = ${(r.workerRate / r.workRate).toFixed(2)}×`,
      met: r.workerRate >= 0.9 * r.workRate,
    },
    {
      target: `--concurrency 8 ≥ 5× --concurrency 1 with a 10 ms handler (${r.backend})`,
      measured: `${(r.concurrency8Rate / r.concurrency1Rate).toFixed(1)}×`,
      met: r.concurrency8Rate >= 5 * r.concurrency1Rate,
    },
    {
      target:
        r.backend === 'pg'
          ? 'wake-up enqueue→claim p50 < 50 ms (PostgreSQL, NOTIFY)'
          : 'wake-up enqueue→claim p50 < the 1000 ms poll interval (SQLite)',
      measured: `${fmtMs(r.wakeP50Ms)} ms (${r.wakeSamples} samples)`,
      met: r.wakeP50Ms < (r.backend === 'pg' ? 50 : 1000),
    },
    {
      target: `idle worker CPU < 1 % of a core (${r.backend})`,
      measured: Number.isNaN(r.idleCpuPercent)
        ? `not measured (${IDLE_NOT_MEASURED})`
        : `${r.idleCpuPercent.toFixed(2)} % (a real onceq worker process, 10 s)`,
      met: Number.isNaN(r.idleCpuPercent) ? null : r.idleCpuPercent < 1,
    },
  ]);
  return { results: found, lines, targets };
}
