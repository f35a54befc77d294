/**
 * The driver methods both backends run with the same SQL (driver/driver.ts): the
 * read-only views, the id policy, prune's pages and tombstones, the counters and the
 * doctor's invariants. `sqliteDriver` and `postgresDriver` take them as they are.
 */
import type { Driver } from '../driver.ts';
import type { Executor } from '../executor.ts';
import { countsByQueue, queueSnapshot } from '../shared-statements.ts';
import type { SqlDialect, SqlText } from '../sql-text.ts';
import { compareCounters, recount, storageCounts } from './counters.ts';
import { selectsNothing } from './dead-selection.ts';
import {
  forgetDeletes,
  forgetPage,
  forgetRecheck,
  readForgottenBefore,
  recordForgottenBefore,
} from './forget.ts';
import {
  countDead,
  countMatching,
  listDead,
  listPage,
  type MessageRow,
  messageById,
  nextDueRow,
  type PreviewRow,
  previewText,
  waitingRow,
} from './inspect.ts';
import { expiredLeases, INVARIANT_ROWS, tablesOf, violations } from './invariants.ts';
import {
  anyMessage,
  appliedMigrations,
  ID_PAGE_SIZE,
  idPage,
  lockIdPolicyRow,
  readIdPolicyRow,
  writeIdPolicy,
} from './meta.ts';
import { blockedKeys, countBlockedKeys, keyTails, rejoinKey, releasedDead } from './ordering.ts';
import { prunableCount, prunePage, pruneRows, pruneValues } from './prune.ts';

type SharedMethods =
  | 'queueSnapshot'
  | 'countsByQueue'
  | 'readMessage'
  | 'listDead'
  | 'countDead'
  | 'listPage'
  | 'countMatching'
  | 'nextDue'
  | 'waiting'
  | 'readForPreview'
  | 'readIdPolicy'
  | 'lockIdPolicy'
  | 'writeIdPolicy'
  | 'hasMessages'
  | 'idPage'
  | 'countPrunable'
  | 'prunePage'
  | 'pruneRows'
  | 'forgetPage'
  | 'forgetRows'
  | 'readForgottenBefore'
  | 'recordForgottenBefore'
  | 'compareCounters'
  | 'recount'
  | 'storageCounts'
  | 'violations'
  | 'expiredLeases'
  | 'appliedMigrations'
  | 'keyTails'
  | 'releasedDead'
  | 'rejoinKey'
  | 'blockedKeys'
  | 'countBlockedKeys';

const count = (row: { n: unknown } | undefined) => Number(row?.n ?? 0);

/** The rows of one statement of fixed shape. */
async function rowsOf<Row>(
  x: Executor,
  text: (d: SqlDialect) => SqlText,
  values: readonly unknown[] = [],
): Promise<Row[]> {
  return (await x.query<Row>(text(x.dialect), values)).rows;
}

export const sharedDriver: Pick<Driver, SharedMethods> = {
  queueSnapshot,
  countsByQueue,
  readMessage: async (x, eventId) => (await rowsOf<MessageRow>(x, messageById, [eventId]))[0],
  listDead,
  countDead,
  listPage,
  countMatching,
  nextDue: async (x, now) =>
    (
      await rowsOf<{ ready_at: unknown; lease_at: unknown; now: unknown }>(x, nextDueRow, [
        x.dialect.nowValue(now),
      ])
    )[0] ?? { ready_at: null, lease_at: null, now },
  waiting: async (x, now) => (await rowsOf(x, waitingRow, [now]))[0] ?? {},
  readForPreview: async (x, selection) => {
    if (selectsNothing(selection)) return [];
    const { text, values } = previewText(x.dialect, selection);
    return (await x.query<PreviewRow>(text, values)).rows;
  },
  readIdPolicy: async (x) => (await rowsOf<{ value: string }>(x, readIdPolicyRow))[0]?.value,
  lockIdPolicy: async (x) => (await rowsOf<{ value: string }>(x, lockIdPolicyRow))[0]?.value,
  writeIdPolicy: async (x, value) => {
    await x.query(writeIdPolicy(x.dialect), [value]);
  },
  hasMessages: async (x) => (await rowsOf(x, anyMessage)).length > 0,
  idPage: async (x, after) => ({
    ids: (await rowsOf<{ event_id: string }>(x, idPage, [after])).map((r) => r.event_id),
    pageSize: ID_PAGE_SIZE,
  }),
  countPrunable: async (x, state, before, queue) =>
    count(
      (
        await rowsOf<{ n: unknown }>(
          x,
          prunableCount(state, queue !== undefined),
          queue === undefined ? [before] : [before, queue],
        )
      )[0],
    ),
  prunePage: async (x, state, before, after, limit, queue) =>
    (
      await x.query<{ event_id: string; payload: string; available_at: number }>(
        prunePage(state, queue !== undefined)(x.dialect, limit),
        [before, after.availableAt, after.eventId, ...(queue === undefined ? [] : [queue])],
      )
    ).rows,
  pruneRows: async (x, state, rows, now, before) =>
    rows.length === 0
      ? 0
      : (await x.query(pruneRows(state)(x.dialect, rows.length), pruneValues(rows, now, before)))
          .changes,
  forgetPage: async (x, state, before, after, limit) =>
    (
      await x.query<{ event_id: string; available_at: number }>(
        forgetPage(state)(x.dialect, limit),
        [before, after.availableAt, after.eventId],
      )
    ).rows,
  forgetRows: async (x, state, ids, before) => {
    if (ids.length === 0) return 0;
    const still = (
      await x.query<{ event_id: string }>(forgetRecheck(state)(x.dialect, ids.length), [
        before,
        ...ids,
      ])
    ).rows.map((r) => r.event_id);
    if (still.length === 0) return 0;
    let deleted = 0;
    for (const text of forgetDeletes(x.dialect)) {
      deleted = (await x.query(text(x.dialect, still.length), still)).changes;
    }
    return deleted; // The last delete is the messages'.
  },
  readForgottenBefore: async (x) =>
    Number((await rowsOf<{ value: string }>(x, readForgottenBefore))[0]?.value ?? 0),
  recordForgottenBefore: async (x, before) => {
    await x.query(recordForgottenBefore(x.dialect), [String(before)]);
  },
  compareCounters,
  recount,
  storageCounts,
  violations: (x, check, limit) => violations(x, INVARIANT_ROWS[check](tablesOf(x.dialect)), limit),
  expiredLeases,
  appliedMigrations: async (x) =>
    (await rowsOf<{ name: string }>(x, appliedMigrations)).map((r) => r.name),
  keyTails,
  releasedDead,
  rejoinKey,
  blockedKeys,
  countBlockedKeys,
};
