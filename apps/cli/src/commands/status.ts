import type { StatusReport } from '@onceq/core';
import { MESSAGE_STATES, type QueueSnapshot, queueSnapshot } from '@onceq/core/internal';
import { expectPositionals } from '../args.ts';
import { defineCommand } from '../command.ts';
import { humanTime, table, toJson } from '../output.ts';

export const statusCommand = defineCommand<null>({
  name: 'status',
  summary: 'counts by state, effects, totals by category',
  flags: {},
  opensStore: true,
  readOnly: true,
  examples: ['status', 'status --json --db ./other.db'],
  parse({ positionals }) {
    expectPositionals(positionals, [], 'status');
    return null;
  },
  async run(_args, { store, json, ctx }) {
    const snapshot = await queueSnapshot(store);
    const { report } = snapshot;
    const ages = queueAges(snapshot);
    if (json) {
      ctx.out(
        toJson({
          ...report,
          // Times, not ages: the same store prints the same document whenever it is read.
          oldest_ready_at: snapshot.oldestReadyAt,
          next_due_at: snapshot.nextDueAt,
          oldest_dead_at: snapshot.oldestDeadAt,
          store: { kind: store.kind, location: store.location },
        }),
      );
    } else {
      for (const line of formatStatus(report, `${store.location} (${store.kind})`)) ctx.out(line);
      // Nothing claimable now but a message in backoff: when it is due, not a bare dash.
      ctx.out(
        ages.ready === null && snapshot.nextDueAt !== null
          ? `oldest ready  none claimable now; next due ${humanTime(snapshot.nextDueAt, snapshot.now)}`
          : `oldest ready  ${formatAge(ages.ready)}`,
      );
      ctx.out(`oldest dead   ${formatAge(ages.dead)}`);
    }
    return 0;
  },
});

/** Seconds the oldest claimable message has waited and the oldest dead one has lain there. */
export function queueAges(s: QueueSnapshot): { ready: number | null; dead: number | null } {
  const age = (t: number | null) => (t === null ? null : Math.max(0, s.now - t));
  return { ready: age(s.oldestReadyAt), dead: age(s.oldestDeadAt) };
}

function formatAge(seconds: number | null): string {
  return seconds === null ? '-' : `${seconds} s`;
}

/**
 * The status for people: counts by state, then money by category, aligned.
 * Stored values only: an expired lease counts as leased until the next claim recovers it.
 */
export function formatStatus(report: StatusReport, location?: string): string[] {
  const lines: string[] = [];
  if (location !== undefined) lines.push(`store  ${location}`, '');
  const messages = MESSAGE_STATES.reduce((sum, state) => sum + report.messages[state], 0);
  lines.push(
    ...table(
      [
        ['state', 'messages'],
        ...MESSAGE_STATES.map((state) => [state, report.messages[state]]),
        ['total', messages],
      ],
      ['left', 'right'],
    ),
  );
  lines.push('');
  lines.push(
    ...table(
      [['category', 'amount_cents'], ...Object.entries(report.totals), ['total', report.total]],
      ['left', 'right'],
    ),
  );
  lines.push('', `effects  ${report.effects}`);
  // Every done message has one recorded outcome: a money effect or a completion of the
  // handler's own, whose rows (and amounts) live in the user's tables, not in the totals.
  const completions = report.messages.done - report.effects;
  if (completions > 0)
    lines.push(`completions  ${completions} (the handler's own rows; not in the totals)`);
  return lines;
}
