/** The flags of `bun run bench`, parsed once; a bad flag is one line and exit 2. */
import { parseArgs } from 'node:util';

export const SECTIONS = [
  'sqlite',
  'pg',
  'enqueue',
  'status',
  'overhead',
  'service',
  'streams',
  'console',
  'startup',
  'scale',
  'webhooks',
  'ordering',
  'growth',
  'soak',
  'anchors',
] as const;
/** The long sections, run only when --only names them. */
const LONG_SECTIONS: readonly string[] = ['anchors', 'streams', 'ordering', 'growth', 'soak'];
/** Sections run when neither --only nor --anchors says otherwise: all but the long ones. */
const DEFAULT_SECTIONS = SECTIONS.filter((s) => !LONG_SECTIONS.includes(s));
export type Section = (typeof SECTIONS)[number];

export const TARGETS = {
  sqliteFullBatch: 20_000,
  perMessageVsBare: 0.8,
  /** A handler's own row per message vs the money effect, same setting, same run. */
  ownRowVsMoney: 0.85,
  enqueue: 150_000,
  pgBatch: 18_000,
  pgPerMessage: 1_000,
  statusMs: 100,
  fairShare: 0.3,
  startupMs: 50,
  /** `onceq serve`: webhooks a second with 64 senders, and their p99 latency. */
  serveRate: 10_000,
  serveP99Ms: 50,
  /** Deliveries a second to a local receiver, one sender. */
  deliveryRate: 5_000,
  /** Ordered (every event keyed) against the same events unordered, same run. */
  orderedVsUnordered: 0.8,
  /** One claim with messages waiting behind blocked keys (median). */
  blockedClaimMs: 5,
  /** Growth: a window on the largest store against the same window on an empty one. */
  growthRate: 0.8,
  growthP99: 1.5,
  /** Soak: no sampled figure drifts beyond this share of its mean after the warm-up. */
  soakDrift: 0.1,
};

export interface Options {
  quick: boolean;
  runs: number;
  messages: number;
  batchSizes: number[];
  only: Set<Section>;
  pgUrl: string | null;
  /** Anchors settings to run, by key or its leading parts (`onceq/pg/w1/b1`, `graphile/w1/c1`); null = all. */
  anchorKeys: string[] | null;
  /** Worker process counts of the scale section; null = its default (1, 4, 8, 16, 32, 64). */
  scaleWorkers: number[] | null;
  /** Growth: events already stored before each pair of windows. */
  growthSizes: number[];
  /** Growth: new events per window. */
  growthWindow: number;
  /** Soak: minutes per backend. */
  soakMinutes: number;
  /** Write docs/benchmarks.md from this run. */
  writeDocs: boolean;
  /** Whether --only named the sections: --write-docs then rewrites just those. */
  sectionsNamed: boolean;
}

function usage(message: string): never {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
}

const HELP = `usage: bun run bench [flags]

Measures onceq and a bare bun:sqlite baseline on this machine; prints a table to stdout
and writes bench-results/latest.json. Progress goes to stderr.

flags:
  --quick            fewer messages and one run each (about half a minute)
  --runs <N>         runs per setting; the table shows the median (min–max). Default 3
  --messages <N>     messages per processing run, at most 10000. Default 10000
  --batches <list>   batch sizes to sweep, e.g. 1,100. Default 1,10,50,100,200,500
  --only <list>      sections: ${SECTIONS.join(', ')}. Default all but
                     ${LONG_SECTIONS.join(', ')} (the long ones)
  --anchors          add the anchors section: plainjob, graphile-worker and pg-boss
                     (pinned dev dependencies of apps/bench) next to onceq, same run
  --anchor-keys <l>  only these anchors settings (keys or their leading parts), e.g.
                     onceq/pg/w1/b1,graphile/w1/c1 (the per-message pair); implies
                     --anchors; add --only anchors to skip the other sections
  --scale-workers <list>
                     worker process counts of the scale section, e.g. 8,32.
                     Default 1,4,8,16,32,64
  --growth-sizes <list>
                     growth: events stored before the windows, e.g. 0,100000.
                     Default 0,1000000,10000000 (--quick: 0,100000)
  --growth-window <N>
                     growth: new events enqueued and worked per window. Default
                     100000 (--quick: 10000)
  --soak-minutes <N> soak: minutes per backend. Default 30 (--quick: 2)
  --pg <url>         PostgreSQL to measure (default $DATABASE_URL, else a throwaway
                     cluster from scripts/pg-cluster.sh when PostgreSQL is installed)
  --write-docs       write docs/benchmarks.md from this run (command, machine, date,
                     commit, every table, the missed targets); with --only, rewrite
                     just those sections and the rows of the targets they measured
  -h, --help         this text
`;

export function options(): Options {
  let parsed: ReturnType<typeof parseFlags>;
  try {
    parsed = parseFlags();
  } catch (error) {
    usage(`${(error as Error).message} (see bun run bench --help)`);
  }
  const { values } = parsed;
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const int = (name: string, text: string | undefined, fallback: number, max = Infinity) => {
    if (text === undefined) return fallback;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1 || n > max) usage(`--${name} must be an integer 1…${max}`);
    return n;
  };
  const quick = values.quick ?? false;
  const only = new Set<Section>();
  for (const part of (values.only ?? DEFAULT_SECTIONS.join(',')).split(',')) {
    if (!(SECTIONS as readonly string[]).includes(part))
      usage(`--only takes ${SECTIONS.join(', ')}`);
    only.add(part as Section);
  }
  if (values.anchors || values['anchor-keys'] !== undefined) only.add('anchors');
  const batchSizes = (values.batches ?? (quick ? '1,100' : '1,10,50,100,200,500'))
    .split(',')
    .map((b) => int('batches', b, 1));
  return {
    quick,
    runs: int('runs', values.runs, quick ? 1 : 3),
    messages: int('messages', values.messages, quick ? 1000 : 10_000, 10_000),
    batchSizes,
    only,
    pgUrl: values.pg ?? process.env.DATABASE_URL ?? null,
    anchorKeys: values['anchor-keys']?.split(',').filter((k) => k !== '') ?? null,
    scaleWorkers:
      values['scale-workers']?.split(',').map((n) => int('scale-workers', n, 1, 256)) ?? null,
    growthSizes: (values['growth-sizes'] ?? (quick ? '0,100000' : '0,1000000,10000000'))
      .split(',')
      .map((n) => {
        const size = Number(n);
        if (!Number.isInteger(size) || size < 0 || size > 100_000_000)
          usage(`--growth-sizes takes integers 0…100000000, got ${JSON.stringify(n)}`);
        return size;
      }),
    growthWindow: int(
      'growth-window',
      values['growth-window'],
      quick ? 10_000 : 100_000,
      1_000_000,
    ),
    soakMinutes: int('soak-minutes', values['soak-minutes'], quick ? 2 : 30, 24 * 60),
    writeDocs: values['write-docs'] ?? false,
    sectionsNamed: values.only !== undefined,
  };
}

function parseFlags() {
  return parseArgs({
    args: Bun.argv.slice(2),
    options: {
      quick: { type: 'boolean', default: false },
      runs: { type: 'string' },
      messages: { type: 'string' },
      batches: { type: 'string' },
      only: { type: 'string' },
      pg: { type: 'string' },
      anchors: { type: 'boolean', default: false },
      'anchor-keys': { type: 'string' },
      'scale-workers': { type: 'string' },
      'growth-sizes': { type: 'string' },
      'growth-window': { type: 'string' },
      'soak-minutes': { type: 'string' },
      'write-docs': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
}
