import { resolve } from 'node:path';
import { backup } from '@onceq/core/admin';
import { isPostgresUrl } from '@onceq/core/postgres';
import { expectPositionals, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { resolveDb } from '../config.ts';
import { UsageError } from '../errors.ts';
import { toJson } from '../output.ts';

export const backupCommand = defineCommand<string>({
  name: 'backup',
  summary: 'copy a SQLite store consistently while workers run (never overwrites)',
  operands: {
    synopsis: '<file>',
    help: [['<file>', 'the copy to write; refused if it exists (PostgreSQL: use pg_dump)']],
  },
  flags: {},
  examples: ['backup backups/onceq-$(date +%F).db'],
  opensStore: true,
  // Refused before the store is opened: a PostgreSQL URL is never connected to.
  parse({ values, positionals, ctx, config }) {
    const [file] = expectPositionals(positionals, ['<file>'], 'backup') as [string];
    const { target } = resolveDb(stringFlag(values, 'db'), ctx.env, ctx.cwd, config);
    if (isPostgresUrl(target)) {
      throw new UsageError(
        'backup copies SQLite stores only; back up PostgreSQL with pg_dump --schema onceq --format custom, restore with pg_restore (see onceq docs operations)',
      );
    }
    return resolve(ctx.cwd, file);
  },
  async run(file, { store, json, ctx }) {
    const result = await backup(store, file);
    const { messages, total } = result.status;
    ctx.out(
      json
        ? toJson({ file: result.file, bytes: result.bytes, status: result.status })
        : `backup written to ${result.file} (${result.bytes} bytes): ready ${messages.ready}, leased ${messages.leased}, done ${messages.done}, dead ${messages.dead}, total ${total}`,
    );
    return 0;
  },
});
