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
/** The result templates: the one place each backend moves a message out of `leased` with a result. */
const S = 'packages/core/src/driver/sqlite/sql/complete.ts';
const Q = 'packages/core/src/driver/postgres/sql/complete.ts';
const W = 'packages/core/src/driver/completion-write.ts';
const R = 'packages/core/src/driver/postgres/completion-rows.ts';

const SQLITE_ACK =
  "WHERE event_id = ?2 AND generation = ?3 AND state = 'leased' AND lease_until > ?1";
const SQLITE_FAIL =
  "WHERE event_id = ?6 AND generation = ?7 AND state = 'leased' AND lease_until > ?5";
// biome-ignore lint/suspicious/noTemplateCurlyInString: source text, matched verbatim
const PG_LIVE = "AND ${d.liveLease(1, 'm.')}";

/** [what, file, text deleted or replaced, replacement] */
const MUTATIONS: readonly [string, string, string, string][] = [
  [
    'SQLite template ACK (`ack`): `generation = ?` deleted',
    S,
    SQLITE_ACK,
    SQLITE_ACK.replace(' AND generation = ?3', ''),
  ],
  [
    "SQLite template ACK (`ack`): `state = 'leased'` deleted",
    S,
    SQLITE_ACK,
    SQLITE_ACK.replace(" AND state = 'leased'", ''),
  ],
  [
    'SQLite template ACK (`ack`): `lease_until > now` deleted',
    S,
    SQLITE_ACK,
    SQLITE_ACK.replace(' AND lease_until > ?1', ''),
  ],
  [
    'SQLite template failure (`fail`): `generation = ?` deleted',
    S,
    SQLITE_FAIL,
    SQLITE_FAIL.replace(' AND generation = ?7', ''),
  ],
  [
    "SQLite template failure (`fail`): `state = 'leased'` deleted",
    S,
    SQLITE_FAIL,
    SQLITE_FAIL.replace(" AND state = 'leased'", ''),
  ],
  [
    'SQLite template failure (`fail`): `lease_until > now` deleted',
    S,
    SQLITE_FAIL,
    SQLITE_FAIL.replace(' AND lease_until > ?5', ''),
  ],
  [
    'SQLite template: the rows written although the fenced ACK matched no row',
    S,
    'if (x.run(ACK, [now, lease.eventId, lease.generation]) === 0) continue;',
    'x.run(ACK, [now, lease.eventId, lease.generation]);',
  ],
  [
    'PostgreSQL template (`complete`, acked and failed steps): `generation = ?` deleted',
    Q,
    '        AND m.generation = input.generation\n',
    '',
  ],
  [
    "PostgreSQL template (`complete`, acked and failed steps): `state = 'leased'` deleted",
    Q,
    PG_LIVE,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: source text, written verbatim
    'AND m.lease_until > ${d.now(1)}',
  ],
  [
    'PostgreSQL template (`complete`, acked and failed steps): `lease_until > now` deleted',
    Q,
    PG_LIVE,
    "AND m.state = 'leased'",
  ],
  [
    "PostgreSQL template: a row inserted although its message's fenced ACK matched no row",
    R,
    'JOIN acked ON acked.event_id = e.v->>0',
    'JOIN input AS acked ON acked.event_id = e.v->>0',
  ],
  [
    "a user's completion: its write runs although its fenced ACK matched no row",
    W,
    '      if (result !== null) return result;\n',
    '',
  ],
  [
    'PostgreSQL fence read (`read-fenced-array`): `FOR UPDATE` deleted',
    P,
    '::text[])\n    FOR UPDATE`,',
    '::text[])`,',
  ],
  [
    "redrive statement (`redrive`): `state = 'dead'` deleted",
    T,
    "WHERE state = 'dead' AND pruned_at IS NULL",
    'WHERE pruned_at IS NULL',
  ],
  [
    'redrive: `FOR UPDATE` of the checked rows deleted (PostgreSQL)',
    T,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: source text, matched verbatim
    "${d.rowLocks ? ' FOR UPDATE' : ''}",
    '',
  ],
];

const TESTS = [
  'tests/conformance/sqlite.test.ts',
  'tests/conformance/postgres.test.ts',
  'tests/postgres/fence.test.ts',
];
const FILTER = 'fence in SQL|apply and fencing|bad part|redrive|lock what|one fenced write';

const dirty = Bun.spawnSync(['git', 'status', '--porcelain', T, P, S, Q, W, R])
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
