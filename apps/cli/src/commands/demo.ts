import { expectPositionals, GLOBAL_FLAGS } from '../args.ts';
import { defineCommand } from '../command.ts';

export const demoCommand = defineCommand<null>({
  name: 'demo',
  summary: 'the demo story (onceq docs protocol, "The demo story") on a fresh store, step by step',
  flags: {
    db: {
      ...GLOBAL_FLAGS.db,
      help: 'tell the story in a new SQLite file (kept) or a fresh PostgreSQL schema (dropped after)',
    },
  },
  // The demo makes its own fresh store; $ONCEQ_DB and the config are deliberately not used.
  opensStore: false,
  examples: ['demo', 'demo --json --db ./demo-story.db'],
  parse({ positionals }) {
    expectPositionals(positionals, [], 'demo');
    return null;
  },
  async run(_args, { json, dbFlag, ctx }) {
    if (dbFlag === undefined && ctx.env.ONCEQ_DB) {
      ctx.err(
        'note: ONCEQ_DB is not used by the demo: it always tells its story on a fresh store (keep one with --db NEW_PATH)',
      );
    }
    // Loaded on demand: the story (and its crash child) is not needed by other commands.
    const { runDemo } = await import('@onceq/demo');
    return runDemo({
      json,
      ...(dbFlag === undefined ? {} : { db: dbFlag }),
      out: ctx.out,
      err: (line) => ctx.err(line.startsWith('onceq:') ? line : `onceq: ${line}`),
    });
  },
});
