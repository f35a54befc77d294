/**
 * `onceq setup` as plain functions: resolve each answer as
 * `flag ?? (prompter ? prompt : default)`, then do the work, then write the config last.
 * No @clack/prompts import here: the prompter is injected.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Clock, EnqueueResult, StatusReport, WorkSummary } from '@onceq/core';
import { enqueue, openStore, status, work } from '@onceq/core';
import { parseIdPolicy } from '@onceq/core/internal';
import { isPostgresUrl } from '@onceq/core/postgres';
import { HANDLER_VERSIONS, type HandlerVersion, isHandlerVersion } from '@onceq/handler/versions';
import { formatStatus } from '../commands/status.ts';
import { CONFIG_FILE, DEFAULT_DB, type OnceqConfig, readConfig, writeConfig } from '../config.ts';
import { chooseHandler } from '../handler-choice.ts';
import { storePathProblem } from '../store-path.ts';
import { askIdPolicy } from './id-policy-step.ts';
import type { Prompter } from './prompter.ts';

/** Answers given on the command line; each one skips its prompt. */
export interface SetupFlags {
  db?: string;
  /** A built-in version or the path of a handler module, as written. */
  handler?: string;
  sample?: boolean;
  run?: boolean;
  /** `lesson`, `general` or `pattern:<regex>`. */
  idPolicy?: string;
}

export interface SetupAnswers {
  /** The store as the user wrote it (kept as is in the config; relative to its directory). */
  db: string;
  /** A built-in version, or a handler module's path (kept as is; relative to the config's directory). */
  handler: string;
  sample: boolean;
  run: boolean;
  /** The store's event id policy; `undefined` keeps the store's own (`lesson` for a new one). */
  idPolicy?: string | undefined;
}

/** The flag that answers each prompt, for the no-terminal hint. */
export const SETUP_FLAGS: Record<keyof SetupAnswers, string> = {
  db: '--db <path|postgres://…>',
  handler: '--handler v1|v2|<module path>',
  sample: '--sample/--no-sample',
  run: '--run/--no-run',
  idPolicy: '--id-policy lesson|general|pattern:<regex>',
};

const HANDLER_HINTS: Record<HandlerVersion, string> = { v1: 'book, pen, bag', v2: 'v1 + toy' };

/**
 * Defaults (`--yes`): the existing config's store and handler (a version or the module it
 * names), else ./onceq.db and v1; sample and run on.
 */
export function setupDefaults(existing: OnceqConfig): SetupAnswers {
  return {
    db: existing.db ?? DEFAULT_DB,
    handler: existing.handler ?? 'v1',
    sample: true,
    run: true,
  };
}

/** The answers no flag gave: each would need a prompt. */
export function unanswered(flags: SetupFlags): (keyof SetupAnswers)[] {
  return (['db', 'handler', 'sample', 'run'] as const).filter((key) => flags[key] === undefined);
}

/**
 * Each answer: the flag, else the prompt (when a prompter is given), else the default.
 * The store comes first and `checkStore` checks it at once, before any other question:
 * a server that cannot be reached stops setup before the user answers the rest.
 */
export async function resolveAnswers(
  flags: SetupFlags,
  prompter: Prompter | null,
  defaults: SetupAnswers,
  cwd = '.',
  checkStore: (db: string) => Promise<void> = async () => {},
): Promise<SetupAnswers> {
  // Asked one after another, in this order; a flag skips its question.
  const answer = async <T>(given: T | undefined, fallback: T, ask: (p: Prompter) => Promise<T>) =>
    given ?? (prompter ? await ask(prompter) : fallback);
  const db = await answer(flags.db, defaults.db, (p) =>
    p.text({
      message: 'Where should the store live? (a SQLite file, or a postgres:// URL)',
      placeholder: defaults.db,
      defaultValue: defaults.db,
      // Checked as typed: a path that cannot work is asked again, with its cause.
      validate: (value) => {
        const path = value.trim() === '' ? defaults.db : value.trim();
        if (isPostgresUrl(path)) return undefined;
        return storePathProblem(resolve(cwd, path), 'write') ?? undefined;
      },
    }),
  );
  await checkStore(db.trim() === '' ? defaults.db : db.trim());
  const sample = await answer(flags.sample, defaults.sample, (p) =>
    p.confirm({
      message: 'Load the 5 sample events of the demo story?',
      initialValue: defaults.sample,
    }),
  );
  const handler = await answer(flags.handler, defaults.handler, (p) =>
    p.select<string>({
      message: 'Which handler should the worker use?',
      options: [
        ...HANDLER_VERSIONS.map((v) => ({ value: v, label: v, hint: HANDLER_HINTS[v] })),
        // The module the config names stays on offer (and is the default).
        ...(isHandlerVersion(defaults.handler)
          ? []
          : [
              {
                value: defaults.handler,
                label: defaults.handler,
                hint: `your module, from ${CONFIG_FILE}`,
              },
            ]),
      ],
      initialValue: defaults.handler,
    }),
  );
  const run = await answer(flags.run, defaults.run, (p) =>
    p.confirm({
      message: 'Run the worker once now and show the status?',
      initialValue: defaults.run,
    }),
  );
  // Asked last; without a prompt and a flag the store keeps its policy (no default).
  const idPolicy = flags.idPolicy ?? (prompter ? await askIdPolicy(prompter) : undefined);
  return { db: db.trim() === '' ? defaults.db : db.trim(), handler, sample, run, idPolicy };
}

export interface SetupDeps {
  cwd: string;
  clock: Clock;
  /** Shows the steps (the clack prompter, or plain lines). */
  reporter: Prompter;
  /** The sample batch (examples/demo.jsonl). */
  loadSample: () => Promise<Uint8Array>;
}

export interface SetupResult {
  configPath: string;
  location: string;
  kind: string;
  createdStore: boolean;
  /** The handler as written into the config (a version or a module's path). */
  handler: string;
  sample: EnqueueResult | null;
  work: WorkSummary | null;
  status: StatusReport;
}

/**
 * Opens (creating and migrating) the store, loads the sample, runs the worker once, then
 * writes `onceq.config.json` atomically as the very last step: a failure or Ctrl-C
 * earlier leaves the old config (or none) in place.
 */
export async function performSetup(answers: SetupAnswers, deps: SetupDeps): Promise<SetupResult> {
  const { reporter } = deps;
  // Loaded first: a module that is missing or broken stops setup before anything is written.
  const chosen = await chooseHandler(answers.handler, () => ({}), deps.cwd, 'handler');
  const target = isPostgresUrl(answers.db) ? answers.db : resolve(deps.cwd, answers.db);
  const createdStore = !isPostgresUrl(target) && !existsSync(target);

  const spin = reporter.spinner();
  spin.start('Opening the store and applying migrations');
  let store: Awaited<ReturnType<typeof openStore>>;
  try {
    store = await openStore(target, {
      clock: deps.clock,
      ...(answers.idPolicy === undefined ? {} : { idPolicy: parseIdPolicy(answers.idPolicy) }),
    });
  } catch (error) {
    spin.error('Could not open the store');
    throw error;
  }
  let sample: EnqueueResult | null = null;
  let summary: WorkSummary | null = null;
  let report: StatusReport;
  try {
    spin.stop(
      createdStore
        ? `Created ${store.location} with the schema`
        : `Schema up to date in ${store.location} (${store.kind})`,
    );
    if (answers.sample) {
      const s = reporter.spinner();
      s.start('Loading the sample events');
      sample = await enqueue(store, await deps.loadSample());
      s.stop(`Sample events: accepted ${sample.accepted}, duplicates ${sample.duplicates}`);
    }
    if (answers.run) {
      const s = reporter.spinner();
      s.start(`Running the worker once with handler ${chosen.name}`);
      summary = await work(store, chosen.handler);
      s.stop(
        `Worker (${chosen.name}) claimed ${summary.claimed}: ${summary.done} done, ${summary.retried} retried, ${summary.dead} dead`,
      );
    }
    report = await status(store);
    // Without a run the status would only repeat what the steps above said.
    if (answers.run) reporter.note(formatStatus(report).join('\n'), 'Status');
  } finally {
    await store.close();
  }

  // Setup chooses the store and the handler; the operator's endpoints and sources stay.
  const { endpoints, sources } = await readConfig(deps.cwd).catch((): OnceqConfig => ({}));
  const configPath = await writeConfig(deps.cwd, {
    db: answers.db,
    handler: answers.handler,
    ...(endpoints === undefined ? {} : { endpoints }),
    ...(sources === undefined ? {} : { sources }),
  });
  reporter.info(`Wrote ${configPath}`);
  return {
    configPath,
    location: store.location,
    kind: store.kind,
    createdStore,
    handler: answers.handler,
    sample,
    work: summary,
    status: report,
  };
}

/**
 * The sample batch: the demo's five lines (the same as examples/demo.jsonl), from code,
 * so the compiled binary needs no file of the repository.
 */
export async function loadSampleEvents(): Promise<Uint8Array> {
  const { DEMO_INPUT } = await import('@onceq/demo');
  return new TextEncoder().encode(`${DEMO_INPUT}\n`);
}
