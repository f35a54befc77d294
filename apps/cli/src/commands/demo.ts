import { expectPositionals } from '../args.ts';
import { defineCommand } from '../command.ts';

/** What `@onceq/demo` exports (apps/demo/src/index.ts). */
interface DemoModule {
  runDemo?: (options: {
    json: boolean;
    db?: string;
    out: (line: string) => void;
  }) => Promise<number>;
}

export const demoCommand = defineCommand<null>({
  name: 'demo',
  summary: 'the story of SPEC §6 on a fresh temporary store, step by step',
  usage: 'demo [--json]',
  flags: [['--db <path>', 'run the story in this store instead of a fresh temporary one']],
  options: {},
  // The demo makes its own temporary store; $ONCEQ_DB and the config are not used.
  opensStore: false,
  parse({ positionals }) {
    expectPositionals(positionals, [], 'demo');
    return null;
  },
  async run(_args, { json, dbFlag, ctx }) {
    const demo = (await import('@onceq/demo')) as unknown as DemoModule;
    if (typeof demo.runDemo !== 'function')
      throw new Error('@onceq/demo does not export runDemo yet');
    return demo.runDemo({ json, ...(dbFlag === undefined ? {} : { db: dbFlag }), out: ctx.out });
  },
});
