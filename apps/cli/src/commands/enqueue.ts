import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { IdPolicy, ParsedBatch } from '@onceq/core';
import { BatchRejectedError, enqueue } from '@onceq/core';
import {
  assignKeys,
  DEFAULT_QUEUE,
  GENERAL_POLICY,
  type KeyOptions,
  MAX_BATCH_BYTES,
  MAX_BATCH_ISSUES,
  MAX_BATCH_LINES,
  MAX_PAYLOAD_BYTES,
  oversizedLine,
  parseBatch,
} from '@onceq/core/internal';
import { probeIdPolicy } from '@onceq/core/schema-version';
import { boolFlag, expectPositionals, queueFlag, stringFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import { resolveDb } from '../config.ts';
import { parseDuration } from '../duration.ts';
import { UsageError } from '../errors.ts';
import { toJson } from '../output.ts';
import { readStdinWithin } from '../stdin.ts';
import { type Chunk, splitBatch } from './split.ts';

interface EnqueueArgs {
  /** One batch, or with `--split` the consecutive batches of a larger file. */
  batches: { chunk: Chunk; batch: ParsedBatch }[];
  split: boolean;
  /** `--delay` / `--at`: when the new messages become claimable. */
  delay: { delaySeconds?: number; availableAt?: number };
  /** `--queue`: the queue the events go to. */
  queue: string;
}

/** `--delay DURATION` or `--at ISO-TIME` as enqueue's options. */
function delayOptions(values: Parameters<typeof stringFlag>[0]): EnqueueArgs['delay'] {
  const delay = stringFlag(values, 'delay');
  const at = stringFlag(values, 'at');
  if (delay !== undefined && at !== undefined) {
    throw new UsageError('give --delay or --at, not both');
  }
  if (delay !== undefined) return { delaySeconds: parseDuration(delay, '--delay') };
  if (at === undefined) return {};
  const ms = Date.parse(at);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(at) || Number.isNaN(ms) || ms < 0) {
    throw new UsageError(
      `--at needs an ISO 8601 time such as 2026-12-01T09:30:00Z, got ${JSON.stringify(at)}`,
    );
  }
  return { availableAt: Math.floor(ms / 1000) };
}

/** The ordering-key flags as enqueue's options; none when no key is asked for. */
function keyOptions(values: Parameters<typeof stringFlag>[0]): KeyOptions {
  const keyField = stringFlag(values, 'key-field');
  const optional = boolFlag(values, 'key-field-optional') === true;
  if (keyField === undefined) {
    if (optional) throw new UsageError('--key-field-optional needs --key-field');
    return {};
  }
  if (keyField.split('.').some((part) => part.length === 0)) {
    throw new UsageError(
      `--key-field needs a dotted path into the payload such as customer.id, got ${JSON.stringify(keyField)}`,
    );
  }
  return { keyField, keyFieldOptional: optional };
}

const n = (value: number) => value.toLocaleString('en-US');

export const enqueueCommand = defineCommand<EnqueueArgs>({
  name: 'enqueue',
  summary: 'validate a JSONL batch and enqueue it, all or nothing',
  operands: {
    synopsis: '<file|->',
    help: [['<file|->', 'the JSONL batch, relative to the current directory; - reads stdin']],
  },
  flags: {
    delay: {
      type: 'string',
      value: 'DURATION',
      help: 'the new messages become claimable this long after enqueue: 90s, 10m, 2h, 1d',
    },
    at: {
      type: 'string',
      value: 'TIME',
      help: 'the new messages become claimable at this ISO 8601 time (2026-12-01T09:30:00Z)',
    },
    queue: {
      type: 'string',
      value: 'NAME',
      help: 'the queue the events go to (default: default); workers claim by queue',
    },
    'key-field': {
      type: 'string',
      value: 'PATH',
      help: "each event's ordering key: a dotted path into its payload (customer.id); a line without it rejects the batch",
    },
    'key-field-optional': {
      type: 'boolean',
      help: 'with --key-field: a payload without the field gives an event without a key',
    },
    split: {
      type: 'boolean',
      help: `enqueue a larger file as consecutive batches of up to ${n(MAX_BATCH_LINES)} lines, each all or nothing`,
    },
  },
  notes: [
    ['line format', 'one JSON object per line: {"event_id":"E0001","payload":{…}}'],
    ['', "exactly these two keys; payload is a JSON object; event_id fits the store's id policy"],
    ['', '(lesson, the default: E + 4 digits; general: 1-200 printable ASCII, no spaces)'],
    [
      'limits',
      `${n(MAX_BATCH_LINES)} non-empty lines and ${n(MAX_BATCH_BYTES)} bytes a batch; ${n(MAX_PAYLOAD_BYTES)} bytes a payload (canonical form)`,
    ],
    ['', 'UTF-8 (a BOM is allowed), LF or CRLF, blank lines ignored'],
    ['', 'one bad line rejects the whole batch (every bad line is listed)'],
    [
      '',
      'same event_id + same payload = duplicate (counted); different payload = conflict (rejected)',
    ],
  ],
  opensStore: true,
  examples: [
    'enqueue events.jsonl',
    'enqueue --key-field customer.id orders.jsonl',
    'enqueue --queue payments payments.jsonl',
    'enqueue --split big.jsonl --json',
  ],
  // The whole envelope is read and validated before the store is even opened.
  async parse({ positionals, values, config, ctx }): Promise<EnqueueArgs> {
    const [file] = expectPositionals(positionals, ['<file|->'], 'enqueue') as [string];
    const split = boolFlag(values, 'split') === true;
    const keys = keyOptions(values);
    const delay = delayOptions(values);
    const queue = queueFlag(values) ?? DEFAULT_QUEUE;
    if (file === '-' && ctx.stdinIsTerminal === true) {
      ctx.err(
        'reading JSONL events from the terminal: type or paste them, then press Ctrl-D on an empty line (Ctrl-C cancels)',
      );
    }
    const bytes =
      file === '-'
        ? // One batch: refuse stdin past the limit while reading (--split takes any size).
          split
          ? await ctx.readStdin()
          : await readStdinWithin(MAX_BATCH_BYTES)
        : await readBatchFile(resolve(ctx.cwd, file), file, split);
    const chunks = split ? splitBatch(bytes) : [wholeFile(bytes)];
    // The store's policy, read only for a rejected batch (without opening the store).
    const storePolicy = () =>
      probeIdPolicy(resolveDb(stringFlag(values, 'db'), ctx.env, ctx.cwd, config).target);
    return {
      split,
      delay,
      queue,
      // Every chunk is validated before anything is written: a bad line anywhere in the
      // file rejects the whole file, with its line number in the file.
      batches: await parseChunks(chunks, keys, storePolicy),
    };
  },
  async run({ batches, split, delay, queue }, { store, json, ctx }) {
    const reports: { batch: number; lines: string; accepted: number; duplicates: number }[] = [];
    let accepted = 0;
    let duplicates = 0;
    for (const [i, { chunk, batch }] of batches.entries()) {
      let result: { accepted: number; duplicates: number };
      try {
        result = await enqueue(store, batch, { ...delay, queue });
      } catch (error) {
        if (split && error instanceof BatchRejectedError) {
          // Batches before this one are committed and stay; later ones are not attempted.
          ctx.err(
            `onceq: batch ${i + 1} of ${batches.length} (lines ${chunk.firstLine}-${chunk.lastLine}) rejected; ${splitOutcome(i, batches.length, accepted)}`,
          );
        }
        throw error;
      }
      accepted += result.accepted;
      duplicates += result.duplicates;
      const lines = `${chunk.firstLine}-${chunk.lastLine}`;
      reports.push({ batch: i + 1, lines, ...result });
      if (split && !json) {
        ctx.out(
          `batch ${i + 1} of ${batches.length} (lines ${lines}): accepted ${result.accepted}, duplicates ${result.duplicates}`,
        );
      }
    }
    if (json) {
      ctx.out(
        toJson(split ? { accepted, duplicates, batches: reports } : { accepted, duplicates }),
      );
    } else {
      ctx.out(`${split ? 'total: ' : ''}accepted ${accepted}, duplicates ${duplicates}`);
    }
    return 0;
  },
});

/**
 * What stays after batch `failed` (0-based) of `total` was rejected: the batches before
 * it are committed, the ones after it were not attempted. Ranges of one batch or none
 * are said as such: `nothing was enqueued`, `batch 1 stays enqueued`.
 */
export function splitOutcome(failed: number, total: number, accepted: number): string {
  const before =
    failed === 0
      ? 'nothing was enqueued'
      : `${failed === 1 ? 'batch 1 stays' : `batches 1-${failed} stay`} enqueued (${accepted} accepted)`;
  const after = total - failed - 1;
  if (after === 0) return before;
  const untried =
    after === 1
      ? `batch ${total} was not attempted`
      : `batches ${failed + 2}-${total} were not attempted`;
  return `${before}; ${untried}`;
}

function wholeFile(bytes: Uint8Array): Chunk {
  return { bytes, firstLine: 1, lastLine: 1 };
}

/**
 * Each chunk's batch, parsed with the widest id envelope: enqueue checks the store's own
 * id policy in its transaction. When any chunk is rejected, every chunk is parsed again
 * with the store's policy, so that one rejection names every bad line of the whole file
 * (up to `MAX_BATCH_ISSUES`, then how many more): an event id the store would refuse in
 * one chunk beside a line of broken JSON in another.
 */
async function parseChunks(
  chunks: readonly Chunk[],
  keys: KeyOptions,
  storePolicy: () => Promise<IdPolicy>,
): Promise<EnqueueArgs['batches']> {
  const batches: EnqueueArgs['batches'] = [];
  let rejected = false;
  for (const chunk of chunks) {
    const outcome = parseChunk(chunk, GENERAL_POLICY, keys);
    if (outcome instanceof BatchRejectedError) rejected = true;
    else batches.push({ chunk, batch: outcome });
  }
  if (!rejected) return batches;
  // A store that cannot be read now is reported when enqueue opens it.
  const policy = await storePolicy().catch(() => GENERAL_POLICY);
  const rejections = chunks.flatMap((chunk) => {
    const outcome = parseChunk(chunk, policy, keys);
    return outcome instanceof BatchRejectedError ? [outcome] : [];
  });
  throw rejections.length === 1 ? rejections[0] : mergeRejections(rejections);
}

/**
 * The rejections of several chunks as one, in line order: each chunk's named lines, then
 * one `… and N more problems` for everything past the cap (a chunk's own cap included).
 */
function mergeRejections(rejections: readonly BatchRejectedError[]): BatchRejectedError {
  const problems = rejections.reduce((sum, error) => sum + error.problems, 0);
  const shown = rejections
    .flatMap((error) => error.issues.filter((issue) => !isCapNote(issue)))
    .slice(0, MAX_BATCH_ISSUES);
  const more = problems - shown.length;
  return new BatchRejectedError(
    more > 0
      ? [...shown, { line: 0, reason: `… and ${more} more problem${more === 1 ? '' : 's'}` }]
      : shown,
    { problems },
  );
}

/** The `… and N more problems` issue a capped rejection ends with. */
function isCapNote(issue: { line: number; reason: string }): boolean {
  return issue.line === 0 && issue.reason.startsWith('… and ');
}

/**
 * A chunk's batch with its ordering keys, or its rejection; the rejection's problems
 * carry line numbers of the whole file.
 */
function parseChunk(
  chunk: Chunk,
  policy: IdPolicy,
  keys: KeyOptions,
): ParsedBatch | BatchRejectedError {
  try {
    return assignKeys(parseBatch(chunk.bytes, policy), keys);
  } catch (error) {
    if (!(error instanceof BatchRejectedError)) throw error;
    const offset = chunk.firstLine - 1;
    return new BatchRejectedError(
      error.issues.map((issue) =>
        issue.line > 0 ? { ...issue, line: issue.line + offset } : issue,
      ),
      { problems: error.problems },
    );
  }
}

async function readBatchFile(path: string, shown: string, split: boolean): Promise<Uint8Array> {
  let size: number;
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new UsageError(`batch file ${shown} is not a regular file`);
    size = info.size;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const code = (error as { code?: string }).code;
    throw new UsageError(
      code === 'ENOENT'
        ? `batch file ${shown} does not exist (looked for ${path})`
        : `cannot read batch file ${shown}: ${(error as Error).message}`,
    );
  }
  if (size > MAX_BATCH_BYTES && !split) {
    // Only the start is read: enough to tell one line past the limit (then that line is
    // the problem, and --split would not help) from a file of many lines.
    const head = await Bun.file(path)
      .slice(0, MAX_BATCH_BYTES + 1)
      .bytes();
    throw new BatchRejectedError([
      oversizedLine(head) ?? {
        line: 0,
        reason: `the file is ${size} bytes, the limit is ${MAX_BATCH_BYTES}`,
      },
    ]);
  }
  return Bun.file(path).bytes();
}
