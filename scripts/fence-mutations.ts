/**
 * Deletes each SQL fence predicate (and a few guards around them) one at a time, runs
 * the fence-related tests, and prints which tests failed: every mutation must be caught
 * by at least one test. The source is restored after each run, whatever happens.
 *
 * Usage: `bun scripts/fence-mutations.ts [index…]` from the repository root, with
 * `DATABASE_URL` set for the PostgreSQL mutations. Refuses to start when the mutated
 * files have uncommitted changes (so a restore can never lose work). Slow: one test run
 * per mutation (about a minute each on a quiet machine). Exit 1 when one survived.
 */
import { readFileSync, writeFileSync } from 'node:fs';

const T = 'packages/core/src/driver/shared-statements.ts';
const P = 'packages/core/src/driver/postgres/statements.ts';
/** The WHERE of the fail statement (`settle-failure`), from the end of its SET. */
const FAIL_WHERE = [
  "      last_error_detail: p.value<string>('detail'),",
  "      updated_at: p.value<number>('now'),",
  '    })',
  "    .where('event_id', '=', p.value<string>('id'))",
  "    .where('generation', '=', p.value<number>('generation'))",
  "    .where('state', '=', stateLiteral('leased'))",
  "    .where('lease_until', '>', p.value<number>('now'));",
].join('\n');
const S = 'packages/core/src/driver/sqlite/statements.ts';
const W = 'packages/core/src/driver/completion-write.ts';
const R = 'packages/core/src/driver/postgres/completion-rows.ts';

/** [what, file, text deleted or replaced, replacement] */
const MUTATIONS: readonly [string, string, string, string][] = [
  [
    'SQLite ACK (`ack`): `generation = ?` deleted',
    T,
    "eb.and([eb('event_id', '=', id), eb('generation', '=', generations[i] as number)]),",
    "eb.and([eb('event_id', '=', id)]),",
  ],
  [
    "SQLite ACK (`ack`): `state = 'leased'` deleted",
    T,
    "updated_at: p.value<number>('now') })\n    .where('state', '=', stateLiteral('leased'))",
    "updated_at: p.value<number>('now') })",
  ],
  [
    'SQLite ACK (`ack`): `lease_until > now` deleted',
    T,
    "    .where('lease_until', '>', p.value<number>('now'))\n    .where('event_id', 'in', ids)",
    "    .where('event_id', 'in', ids)",
  ],
  [
    'PostgreSQL ACK+effects (`ack-with-effects`): `generation = ?` deleted',
    P,
    '        AND m.generation = input.generation\n',
    '',
  ],
  [
    "PostgreSQL ACK+effects (`ack-with-effects`): `state = 'leased'` deleted",
    P,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: source text, matched verbatim
    "        AND m.state = ${stateLiteral('leased')}\n",
    '',
  ],
  [
    'PostgreSQL ACK+effects (`ack-with-effects`): `lease_until > now` deleted',
    P,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: source text, matched verbatim
    "        AND m.lease_until > ${p.value<number>('now')}\n",
    '',
  ],
  // The fail statement's WHERE, told apart from extend's and release's (which share its
  // predicates) by the end of its SET.
  [
    'fail (`settle-failure`): `generation = ?` deleted',
    T,
    FAIL_WHERE,
    FAIL_WHERE.replace("    .where('generation', '=', p.value<number>('generation'))\n", ''),
  ],
  [
    "fail (`settle-failure`): `state = 'leased'` deleted",
    T,
    FAIL_WHERE,
    FAIL_WHERE.replace("    .where('state', '=', stateLiteral('leased'))\n", ''),
  ],
  [
    'fail (`settle-failure`): `lease_until > now` deleted',
    T,
    FAIL_WHERE,
    FAIL_WHERE.replace("\n    .where('lease_until', '>', p.value<number>('now'))", ''),
  ],
  [
    'PostgreSQL fence read (`read-fenced-array`): `FOR UPDATE` deleted',
    P,
    '::text[])\n    FOR UPDATE`,',
    '::text[])`,',
  ],
  [
    "redrive statement (`redriveUpdate`): `state = 'dead'` deleted",
    T,
    "updated_at: now })\n    .where('state', '=', stateLiteral('dead'))",
    'updated_at: now })',
  ],
  [
    'SQLite completion: the effect row written although its fenced ACK matched no row',
    S,
    '      if (ackRow(x, lease, now) === 0) continue;\n',
    '      ackRow(x, lease, now);\n',
  ],
  [
    "a user's completion: its write runs although its fenced ACK matched no row",
    W,
    '      if ((await steps.ack()) === 0) return undefined;\n',
    '      await steps.ack();\n',
  ],
  [
    "PostgreSQL insert rows: a row inserted although its message's fenced ACK matched no row",
    R,
    'JOIN acked ON acked.event_id = e.v->>0',
    '',
  ],
  [
    'redrive: `FOR UPDATE` of the checked rows deleted (PostgreSQL)',
    T,
    "      .where('event_id', 'in', p.list<string>('ids', n))\n      .forUpdate(),",
    "      .where('event_id', 'in', p.list<string>('ids', n)),",
  ],
];

const TESTS = ['tests/sqlite.test.ts', 'tests/postgres.test.ts', 'tests/postgres-fence.test.ts'];
const FILTER = 'fence in SQL|apply and fencing|bad part|redrive|lock what|one fenced write';

const dirty = Bun.spawnSync(['git', 'status', '--porcelain', T, P, S, W, R])
  .stdout.toString()
  .trim();
if (dirty !== '') {
  console.error(`fence-mutations: commit or stash these first:\n${dirty}`);
  process.exit(2);
}
if (!process.env.DATABASE_URL)
  console.warn('fence-mutations: DATABASE_URL unset, PostgreSQL tests skip');

const only = new Set(Bun.argv.slice(2).map(Number));
let survived = 0;
for (const [index, [what, file, from, to]] of MUTATIONS.entries()) {
  if (only.size > 0 && !only.has(index)) continue;
  const source = readFileSync(file, 'utf8');
  if (source.split(from).length !== 2) {
    console.log(`## ${index} ${what}: the text to mutate was not found exactly once`);
    survived++;
    continue;
  }
  writeFileSync(file, source.replace(from, to));
  try {
    const run = Bun.spawnSync(['bun', 'test', '--timeout', '60000', ...TESTS, '-t', FILTER], {
      env: { ...process.env },
    });
    const out = `${run.stdout}${run.stderr}`;
    const failed = [...new Set(out.split('\n').filter((l) => l.startsWith('(fail)')))].map((l) =>
      l.slice(7).replace(/ \[[\d.]+m?s\]$/, ''),
    );
    console.log(
      `## ${index} ${what}: ${failed.length === 0 ? 'SURVIVED' : `caught by ${failed.length}`}`,
    );
    for (const name of failed) console.log(`   ${name}`);
    if (failed.length === 0) survived++;
  } finally {
    writeFileSync(file, source);
  }
}
process.exit(survived === 0 ? 0 : 1);
