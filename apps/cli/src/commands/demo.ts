import { expectPositionals } from '../args.ts';
import { defineCommand } from '../command.ts';

export const demoCommand = defineCommand<null>({
  name: 'demo',
  summary: 'the story of SPEC §6 on a fresh temporary store, step by step',
  usage: 'demo [--json]',
  flags: [
    [
      '--db <path|postgres://…>',
      'tell the story in a new SQLite file (kept) or a fresh PostgreSQL schema (dropped after)',
    ],
  ],
  options: {},
  // The demo makes its own fresh store; $ONCEQ_DB and the config are deliberately not used.
  opensStore: false,
  parse({ positionals }) {
    expectPositionals(positionals, [], 'demo');
    return null;
  },
  async run(_args, { json, dbFlag, ctx }) {
    // Loaded on demand: the story (and its crash child) is not needed by other commands.
    const { runDemo } = await import('@onceq/demo');
    return runDemo({
      json,
      ...(dbFlag === undefined ? {} : { db: dbFlag }),
      out: ctx.out,
      err: ctx.err,
    });
  },
});
