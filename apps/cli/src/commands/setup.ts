import { resolve } from 'node:path';
import { formatIdPolicy, parseIdPolicy } from '@onceq/core/internal';
import { isPostgresUrl } from '@onceq/core/postgres';
import { boolFlag, expectPositionals, GLOBAL_FLAGS, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { CONFIG_FILE, checkHandlerFlag, hasPassword, readConfig } from '../config.ts';
import { CancelledError, UsageError } from '../errors.ts';
import { HANDLER_FLAG } from '../handler-choice.ts';
import { toJson } from '../output.ts';
import { plainPrompter } from '../setup/prompter.ts';
import {
  loadSampleEvents,
  performSetup,
  resolveAnswers,
  SETUP_FLAGS,
  type SetupFlags,
  setupDefaults,
  unanswered,
} from '../setup/steps.ts';
import { storePathProblem } from '../store-path.ts';

interface SetupArgs {
  flags: SetupFlags;
  yes: boolean;
}

export const setupCommand = defineCommand<SetupArgs>({
  name: 'setup',
  summary:
    'guided setup: store, schema, sample events, handler, first run; writes onceq.config.json',
  flags: {
    db: {
      ...GLOBAL_FLAGS.db,
      help: 'the store (default: the current config, else ./onceq.db); checked before the other questions',
    },
    handler: {
      ...HANDLER_FLAG,
      help: 'the handler to write into the config: a version, or your own module (default: config "handler", then v1)',
    },
    sample: { type: 'boolean', negatable: true, help: 'load the 5 sample events (default: yes)' },
    run: {
      type: 'boolean',
      negatable: true,
      help: 'run the worker once and show the status (default: yes)',
    },
    'id-policy': {
      type: 'string',
      value: 'policy',
      help: 'event ids the store accepts: lesson (E0000-E9999, default), general, pattern:<regex>',
    },
    yes: {
      type: 'boolean',
      short: 'y',
      help: 'no questions: reuse the store and handler of the current onceq.config.json (else ./onceq.db and v1), load the sample, run once',
    },
  },
  // Setup asks where the store lives first, then opens it itself.
  opensStore: false,
  examples: ['setup', 'setup --yes --db ./shop.db --handler v2 --no-run'],
  parse({ values, positionals }) {
    expectPositionals(positionals, [], 'setup');
    const handler = stringFlag(values, 'handler');
    const flags: SetupFlags = {};
    const db = stringFlag(values, 'db');
    if (db !== undefined) {
      if (db.trim() === '')
        throw new UsageError('--db needs a SQLite file path or a postgres:// URL');
      flags.db = db;
    }
    if (handler !== undefined) {
      checkHandlerFlag(handler);
      flags.handler = handler;
    }
    const sample = boolFlag(values, 'sample');
    if (sample !== undefined) flags.sample = sample;
    const run = boolFlag(values, 'run');
    if (run !== undefined) flags.run = run;
    const idPolicy = stringFlag(values, 'id-policy');
    if (idPolicy !== undefined) flags.idPolicy = formatIdPolicy(parseIdPolicy(idPolicy));
    return { flags, yes: boolFlag(values, 'yes') === true };
  },
  async run({ flags, yes }, { ctx, json, clock }) {
    const missing = yes ? [] : unanswered(flags);
    // clack writes to stdout, so --json never prompts.
    const prompting = missing.length > 0 && ctx.interactive && !json;
    if (missing.length > 0 && !prompting) {
      if (ctx.env.CI && ctx.stdinIsTerminal === true && !json) {
        throw new UsageError(
          `CI is set (CI=${ctx.env.CI}), and CI mode disables prompts even in a terminal: unset CI to answer the questions, or pass --yes or flags: ${Object.values(SETUP_FLAGS).join(', ')}`,
        );
      }
      throw new UsageError(
        `setup needs a terminal to ask its questions; pass --yes to take the defaults, or answer them with flags: ${Object.values(SETUP_FLAGS).join(', ')} (unanswered: ${missing.map((k) => SETUP_FLAGS[k].split(/[ /]/)[0]).join(', ')})`,
      );
    }
    const prompter =
      prompting || (ctx.interactive && !json) ? await ctx.prompter() : plainPrompter(ctx, json);
    let existing = {};
    try {
      existing = await readConfig(ctx.cwd);
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      prompter.warn(`${error.message}; setup will replace it`);
    }
    prompter.intro('onceq setup');
    try {
      const answers = await resolveAnswers(
        flags,
        prompting ? prompter : null,
        setupDefaults(existing),
        ctx.cwd,
        (db) => checkStore(db, ctx.cwd),
      );
      const result = await performSetup(answers, {
        cwd: ctx.cwd,
        clock,
        reporter: prompter,
        loadSample: loadSampleEvents,
      });
      if (hasPassword(answers.db)) {
        prompter.warn(
          `${CONFIG_FILE} now holds a database password: keep it out of version control, or set ONCEQ_DB instead`,
        );
      }
      if (ctx.env.ONCEQ_DB) {
        prompter.warn(`ONCEQ_DB is set and takes precedence over ${CONFIG_FILE}`);
      }
      if (json) {
        ctx.out(
          toJson({
            config: result.configPath,
            db: result.location,
            kind: result.kind,
            created: result.createdStore,
            handler: result.handler,
            sample: result.sample,
            work: result.work,
            status: result.status,
          }),
        );
      } else {
        prompter.outro('Ready. Next: onceq status · onceq dlq · onceq work');
      }
      return 0;
    } catch (error) {
      if (error instanceof CancelledError) {
        prompter.cancel('setup cancelled, nothing written');
        return error.exitCode;
      }
      throw error;
    }
  },
});

/**
 * The store answer, checked before the other questions: a PostgreSQL server is reached
 * (nothing created: the same read as `onceq --version`), a SQLite path must be writable.
 */
async function checkStore(db: string, cwd: string): Promise<void> {
  if (isPostgresUrl(db)) {
    const { probeSchemaVersion } = await import('@onceq/core/schema-version');
    await probeSchemaVersion(db);
    return;
  }
  const problem = storePathProblem(resolve(cwd, db), 'write');
  if (problem !== null) throw new UsageError(`cannot use the store ${db}: ${problem}`);
}
