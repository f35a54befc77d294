import { skip } from '@onceq/core';
import { defineCommand } from '../command.ts';
import { UsageError } from '../errors.ts';
import { toJson } from '../output.ts';

interface SkipArgs {
  ids: string[];
}

export const skipCommand = defineCommand<SkipArgs>({
  name: 'skip',
  summary: 'put dead messages aside as skipped, releasing their ordering keys',
  operands: {
    synopsis: '<id>…',
    help: [['<id>…', 'the dead messages to skip (anything not dead refuses the whole call)']],
  },
  flags: {},
  notes: [
    ['skipped', 'a final state of its own: never done, no effect; the message leaves the DLQ'],
    ['', "with an ordering key, the key's next message becomes ready at once"],
  ],
  opensStore: true,
  existingStore: true,
  examples: ['skip E0004'],
  async parse({ positionals }) {
    if (positionals.length === 0) throw new UsageError('skip needs event ids');
    return { ids: [...new Set(positionals)] };
  },
  async run({ ids }, { store, json, ctx }) {
    const skipped = await skip(store, ids);
    if (json) ctx.out(toJson({ skipped }));
    else ctx.out(`skipped ${skipped.length}: ${skipped.join(', ')}`);
    return 0;
  },
});
