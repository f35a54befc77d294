import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import {
  BatchRejectedError,
  enqueue,
  GENERAL_POLICY,
  type ParsedBatch,
  parseBatch,
} from '@onceq/core';
import { expectPositionals } from '../args.ts';
import { defineCommand } from '../command.ts';
import { UsageError } from '../errors.ts';
import { toJson } from '../output.ts';
import { readStdinWithin } from '../stdin.ts';

/** SPEC §2: a batch file holds at most this many bytes; larger files are refused unread. */
const MAX_BATCH_BYTES = 1_000_000;

export const enqueueCommand = defineCommand({
  name: 'enqueue',
  summary: 'validate a JSONL batch and enqueue it, all or nothing',
  usage: 'enqueue <file|->',
  flags: [['<file|->', 'the JSONL batch; - reads stdin']],
  options: {},
  opensStore: true,
  // The whole envelope is read and validated before the store is even opened.
  async parse({ positionals, ctx }): Promise<ParsedBatch> {
    const [file] = expectPositionals(positionals, ['<file|->'], 'enqueue') as [string];
    const bytes =
      file === '-'
        ? await readStdinWithin(MAX_BATCH_BYTES)
        : await readBatchFile(resolve(ctx.cwd, file), file);
    // The widest id envelope here; enqueue checks the store's own id policy in its transaction.
    return parseBatch(bytes, GENERAL_POLICY);
  },
  async run(batch, { store, json, ctx }) {
    const result = await enqueue(store, batch);
    ctx.out(
      json
        ? toJson({ accepted: result.accepted, duplicates: result.duplicates })
        : `accepted ${result.accepted}, duplicates ${result.duplicates}`,
    );
    return 0;
  },
});

async function readBatchFile(path: string, shown: string): Promise<Uint8Array> {
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
        ? `batch file ${shown} does not exist`
        : `cannot read batch file ${shown}: ${(error as Error).message}`,
    );
  }
  if (size > MAX_BATCH_BYTES) {
    throw new BatchRejectedError([
      { line: 0, reason: `the file is ${size} bytes, the limit is ${MAX_BATCH_BYTES}` },
    ]);
  }
  return Bun.file(path).bytes();
}
