/**
 * The driver methods both backends run with the same SQL (driver/driver.ts): the
 * read-only views, the id policy, prune's pages and tombstones, the counters and the
 * doctor's invariants. `sqliteDriver` and `postgresDriver` take them as they are.
 */
import type { Driver } from '../driver.ts';
import { compareCounters, recount } from './counters.ts';
import {
  agesRow,
  deadAll,
  deadCount,
  deadFirst,
  filterOf,
  listCount,
  listPage,
  messageById,
  nextDueRow,
  previewAll,
  previewSome,
  waitingRow,
} from './inspect.ts';
import { expiredLeases, INVARIANT_ROWS, violations } from './invariants.ts';
import {
  anyMessage,
  ID_PAGE_SIZE,
  idPage,
  lockIdPolicyRow,
  readIdPolicyRow,
  writeIdPolicy,
} from './meta.ts';
import { prunableCount, prunePage, pruneRows } from './prune.ts';

type SharedMethods =
  | 'readMessage'
  | 'listDead'
  | 'countDead'
  | 'listPage'
  | 'countMatching'
  | 'nextDue'
  | 'waiting'
  | 'ages'
  | 'readForPreview'
  | 'readIdPolicy'
  | 'lockIdPolicy'
  | 'writeIdPolicy'
  | 'hasMessages'
  | 'idPage'
  | 'countPrunable'
  | 'prunePage'
  | 'pruneRows'
  | 'compareCounters'
  | 'recount'
  | 'violations'
  | 'expiredLeases'
  | 'appliedMigrations';

const count = (row: { n: unknown } | undefined) => Number(row?.n ?? 0);

export const sharedDriver: Pick<Driver, SharedMethods> = {
  readMessage: async (x, eventId) => (await x.rows(messageById, { id: eventId }))[0],
  listDead: (x, limit) =>
    limit === undefined ? x.rows(deadAll, {}) : x.rows(deadFirst, {}, limit),
  countDead: async (x) => count((await x.rows(deadCount, {}))[0]),
  listPage: (x, page) => {
    const { shape, values } = filterOf(page.filter);
    if (page.after !== undefined) {
      values.afterId = page.after.id;
      if (page.order !== 'id') values.afterAt = page.after.at;
    }
    const statement = listPage({ ...shape, order: page.order, cursor: page.after !== undefined });
    return x.rows(statement, values, page.limit);
  },
  countMatching: async (x, filter) => {
    const { shape, values } = filterOf(filter);
    return count((await x.rows(listCount(shape), values))[0]);
  },
  nextDue: async (x, now) =>
    (await x.rows(nextDueRow, { now }))[0] ?? { ready_at: null, lease_at: null, now },
  waiting: async (x, now) => (await x.rows(waitingRow, { now }))[0] ?? {},
  ages: async (x) => (await x.rows(agesRow, {}))[0] ?? { ready_at: null, dead_at: null },
  readForPreview: (x, ids) =>
    ids === 'all' ? x.rows(previewAll, {}) : x.rows(previewSome, { ids }, ids.length),
  readIdPolicy: async (x) => (await x.rows(readIdPolicyRow, {}))[0]?.value,
  lockIdPolicy: async (x) => (await x.rows(lockIdPolicyRow, {}))[0]?.value,
  writeIdPolicy: async (x, value) => {
    await x.changes(writeIdPolicy, { value });
  },
  hasMessages: async (x) => (await x.rows(anyMessage, {})).length > 0,
  idPage: async (x, after) => ({
    ids: (await x.rows(idPage, { after })).map((r) => r.event_id),
    pageSize: ID_PAGE_SIZE,
  }),
  countPrunable: async (x, state, before) =>
    count((await x.rows(prunableCount(state), { before }))[0]),
  prunePage: (x, state, before, after, limit) =>
    x.rows(
      prunePage(state),
      { before, availableAt: after.availableAt, eventId: after.eventId },
      limit,
    ),
  pruneRows: (x, state, rows, now, before) =>
    x.changes(
      pruneRows(state),
      { ids: rows.map((r) => r.eventId), hashes: rows.map((r) => r.sha256), now, before },
      rows.length,
    ),
  compareCounters,
  recount,
  violations: (x, check, maxAttempts, limit) =>
    violations(x, INVARIANT_ROWS[check](maxAttempts), limit),
  expiredLeases,
  appliedMigrations: async (x) =>
    (await x.query<{ name: string }>('select name from onceq_migrations order by name')).rows.map(
      (r) => r.name,
    ),
};
