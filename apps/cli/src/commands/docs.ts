/// <reference path="../markdown.d.ts" />
import cli from '../../../../docs/cli.md' with { type: 'text' };
import consoleGuide from '../../../../docs/console.md' with { type: 'text' };
import handlers from '../../../../docs/handlers.md' with { type: 'text' };
import operations from '../../../../docs/operations.md' with { type: 'text' };
import ordering from '../../../../docs/ordering.md' with { type: 'text' };
import packages from '../../../../docs/packages.md' with { type: 'text' };
import postgres from '../../../../docs/postgres.md' with { type: 'text' };
import protocol from '../../../../docs/protocol.md' with { type: 'text' };
import tutorial from '../../../../docs/tutorial.md' with { type: 'text' };
import webhooks from '../../../../docs/webhooks.md' with { type: 'text' };
import worker from '../../../../docs/worker.md' with { type: 'text' };
import { defineCommand } from '../command.ts';
import { UsageError } from '../errors.ts';
import { table, toJson } from '../output.ts';
import { didYouMean } from '../suggest.ts';

/**
 * The guides the binary carries. Text imports, so `bun build --compile` embeds every page:
 * a user with only the executable reads the same docs as one with the repository.
 */
export const DOC_TOPICS = {
  protocol: {
    summary: 'input format, states, fencing, retries and the guarantees',
    text: protocol,
  },
  tutorial: { summary: 'twelve experiments, each showing a guarantee at work', text: tutorial },
  handlers: {
    summary: 'writing your own handler, and enqueueing in your transaction',
    text: handlers,
  },
  ordering: {
    summary: 'ordering keys: one at a time per key, in order; blocked keys, skip',
    text: ordering,
  },
  worker: { summary: 'the worker as a service: loop, signals, metrics, logs', text: worker },
  operations: {
    summary: 'id policies, retention, the doctor, backup, systemd',
    text: operations,
  },
  postgres: {
    summary: 'PostgreSQL: pooling, TLS, the connection budget, the clock, scale',
    text: postgres,
  },
  webhooks: {
    summary: 'webhooks out (the outbox, onceq deliver) and in: what is exactly once',
    text: webhooks,
  },
  console: { summary: 'the web console and its security', text: consoleGuide },
  packages: { summary: 'installing the library from its tarballs, publishing', text: packages },
  cli: { summary: 'every command and flag', text: cli },
} as const satisfies Record<string, { summary: string; text: string }>;

type Topic = keyof typeof DOC_TOPICS;
const TOPICS = Object.keys(DOC_TOPICS) as Topic[];

export const docsCommand = defineCommand<Topic | null>({
  name: 'docs',
  summary: 'print a guide carried by this binary (no topic: the list)',
  operands: {
    synopsis: '[topic]',
    help: [['[topic]', `one of ${TOPICS.join(', ')}`]],
  },
  flags: {},
  opensStore: false,
  examples: ['docs', 'docs protocol | less'],
  parse({ positionals }) {
    if (positionals.length > 1) {
      throw new UsageError(`docs takes one topic: ${TOPICS.join(', ')}`);
    }
    const topic = positionals[0];
    if (topic === undefined) return null;
    if (!(TOPICS as string[]).includes(topic)) {
      throw new UsageError(
        `unknown docs topic ${JSON.stringify(topic)}${didYouMean(topic, TOPICS)} (topics: ${TOPICS.join(', ')})`,
      );
    }
    return topic as Topic;
  },
  async run(topic, { ctx, json }) {
    if (topic !== null) {
      ctx.out(json ? toJson({ topic, text: DOC_TOPICS[topic].text }) : DOC_TOPICS[topic].text);
      return 0;
    }
    if (json) {
      ctx.out(toJson(TOPICS.map((t) => ({ topic: t, summary: DOC_TOPICS[t].summary }))));
      return 0;
    }
    ctx.out('guides (onceq docs <topic>):');
    for (const line of table(TOPICS.map((t) => [t, DOC_TOPICS[t].summary]))) ctx.out(`  ${line}`);
    return 0;
  },
});
