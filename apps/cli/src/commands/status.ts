import { MESSAGE_STATES, type StatusReport, status } from '@onceq/core';
import { expectPositionals } from '../args.ts';
import { defineCommand } from '../command.ts';
import { table, toJson } from '../output.ts';

export const statusCommand = defineCommand<null>({
  name: 'status',
  summary: 'counts by state, effects, totals by category',
  usage: 'status',
  flags: [],
  options: {},
  opensStore: true,
  readOnly: true,
  examples: ['status', 'status --json --db ./other.db'],
  parse({ positionals }) {
    expectPositionals(positionals, [], 'status');
    return null;
  },
  async run(_args, { store, json, ctx }) {
    const report = await status(store);
    if (json) {
      ctx.out(toJson({ ...report, store: { kind: store.kind, location: store.location } }));
    } else {
      for (const line of formatStatus(report, `${store.location} (${store.kind})`)) ctx.out(line);
    }
    return 0;
  },
});

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
  return lines;
}
