/**
 * Webhooks in, as a fetch handler `(Request) => Promise<Response>` that `onceq serve`
 * mounts and a program can mount in its own server. Per request: the path picks the
 * source; the body is read up to the limit (413 past it); the source verifies it (401,
 * nothing written); the body goes through the same strict JSON parser and payload rules
 * as an enqueued line (400 naming the problem, 413 for a payload over the limit); then
 * it is enqueued, and only after the commit is it answered 200 (a duplicate too; a
 * conflicting payload under a stored event id is 409). So a sender's retry after any
 * failure is safe.
 *
 * Group commit: requests that arrive while a commit is running are enqueued together by
 * the next one, one transaction (one fsync on SQLite FULL) for all of them. Should the
 * group be refused (one conflict refuses a whole batch), each request of it is enqueued
 * on its own, so each gets its own answer.
 */
import type { Store } from '../driver/backend.ts';
import { BatchRejectedError } from '../errors.ts';
import type { BatchEntry, ParsedBatch } from '../input/batch.ts';
import { checkedEvent, MAX_BATCH_BYTES, MAX_BATCH_LINES } from '../input/batch.ts';
import { GENERAL_POLICY, idMatcher } from '../input/id-policy.ts';
import { isJsonObject, type JsonObject } from '../input/json-value.ts';
import { JsonParseError, parseJson } from '../input/parse-json.ts';
import { enqueue } from '../queue/enqueue.ts';
import {
  type IngestSource,
  type ResolvedSource,
  resolveSource,
  SourceConfigError,
} from './source.ts';

export interface IngestOptions {
  readonly sources: readonly IngestSource[];
  /** The largest body read, in bytes; past it 413. Default 1,000,000 (a batch's limit). */
  readonly maxBodyBytes?: number;
  /** Called with each commit's size (for logs and metrics). */
  readonly onCommit?: (events: number) => void;
}

export interface Ingest {
  /** Answers one request; never throws. */
  fetch(request: Request): Promise<Response>;
  /** Resolves once every request received so far is answered. */
  drain(): Promise<void>;
}

interface Waiting {
  readonly entry: BatchEntry;
  readonly resolve: (response: Response) => void;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

function answer(status: number, body: Record<string, unknown>): Response {
  return new Response(`${JSON.stringify(body)}\n`, {
    status,
    headers: { 'content-type': 'application/json' },
  });
}

/** The ingest fetch handler for `store` and `options.sources`. Throws {@link SourceConfigError} for a source it cannot use. */
export function createIngest(store: Store, options: IngestOptions): Ingest {
  const byPath = new Map<string, ResolvedSource>();
  for (const source of options.sources.map(resolveSource)) {
    if (byPath.has(source.path)) {
      throw new SourceConfigError(
        `source ${source.name}: another source already posts to ${source.path}`,
      );
    }
    byPath.set(source.path, source);
  }
  const maxBody = options.maxBodyBytes ?? MAX_BATCH_BYTES;
  const queue: Waiting[] = [];
  let committing = false;
  let open = 0;
  /** Who waits in {@link Ingest.drain} for the requests open now to be answered. */
  let drainers: (() => void)[] = [];

  const commitGroups = async () => {
    // Let requests already read reach the queue first: a commit blocks the thread on
    // SQLite, and requests that arrived meanwhile belong in the next group, not in one
    // after it.
    await new Promise((resolve) => setImmediate(resolve));
    while (queue.length > 0) {
      // One group: distinct event ids (a second request for an id waits for the next
      // group, so its answer says what the first one's commit left), at most a batch.
      const group: Waiting[] = [];
      const ids = new Set<string>();
      const later: Waiting[] = [];
      for (const w of queue.splice(0)) {
        if (ids.has(w.entry.eventId) || group.length >= MAX_BATCH_LINES) later.push(w);
        else {
          ids.add(w.entry.eventId);
          group.push(w);
        }
      }
      queue.unshift(...later);
      await commit(group);
      await new Promise((resolve) => setImmediate(resolve));
    }
    committing = false;
  };

  const commit = async (group: readonly Waiting[]) => {
    const batch: ParsedBatch = {
      entries: group.map((w, i) => ({ ...w.entry, line: i + 1 })),
      duplicates: 0,
      lines: group.length,
      unit: 'event',
    };
    try {
      await enqueue(store, batch);
      options.onCommit?.(group.length);
      for (const w of group) w.resolve(answer(200, { event_id: w.entry.eventId }));
      return;
    } catch (error) {
      if (!(error instanceof BatchRejectedError) || group.length === 1) {
        for (const w of group) w.resolve(refusal(error, w.entry.eventId));
        return;
      }
    }
    for (const w of group) await commit([w]);
  };

  const handle = async (request: Request): Promise<Response> => {
    const source = byPath.get(new URL(request.url).pathname);
    if (source === undefined) return answer(404, { error: 'no webhook source posts to this path' });
    if (request.method !== 'POST') return answer(405, { error: 'webhooks are POSTed' });
    const declared = Number(request.headers.get('content-length') ?? '0');
    if (declared > maxBody) return answer(413, { error: `the body is over ${maxBody} bytes` });
    const body = await readBody(request, maxBody);
    if (body === null) return answer(413, { error: `the body is over ${maxBody} bytes` });
    const refused = source.check(request.headers, body, store.clock());
    if (refused !== null) return answer(401, { error: refused });
    let payload: JsonObject;
    try {
      const value = parseJson(decoder.decode(body));
      if (!isJsonObject(value)) return answer(400, { error: 'the body must be a JSON object' });
      payload = value;
    } catch (error) {
      const why = error instanceof JsonParseError ? error.reason : 'it is not valid UTF-8';
      return answer(400, { error: `the body is not valid JSON: ${why}` });
    }
    const eventId =
      'header' in source.eventId
        ? request.headers.get(source.eventId.header)
        : payload[source.eventId.field];
    const from =
      'header' in source.eventId
        ? `header ${source.eventId.header}`
        : `body field ${source.eventId.field}`;
    if (typeof eventId !== 'string' || eventId === '') {
      return answer(400, { error: `no event id: the ${from} must be a non-empty string` });
    }
    // The same rules as an enqueued line's payload (size; the parser has checked depth and
    // numbers); the store's id policy is checked when the group is enqueued.
    const checked = checkedEvent(eventId, payload, fitsGeneral, GENERAL_POLICY);
    if (typeof checked === 'string') return refusedFor(checked, eventId);
    const entry: BatchEntry = { line: 1, ...checked };
    return new Promise<Response>((resolve) => {
      queue.push({ entry, resolve });
      if (!committing) {
        committing = true;
        void commitGroups();
      }
    });
  };

  return {
    async fetch(request) {
      open += 1;
      try {
        return await handle(request);
      } catch {
        return answer(500, { error: 'the event was not stored; retry' });
      } finally {
        open -= 1;
        if (open === 0) {
          const waiting = drainers;
          drainers = [];
          for (const resolve of waiting) resolve();
        }
      }
    },
    drain() {
      if (open === 0) return Promise.resolve();
      return new Promise((resolve) => {
        drainers.push(resolve);
      });
    },
  };
}

const fitsGeneral = idMatcher(GENERAL_POLICY);

/** The answer for a refused event: 409 for a conflict, 413 for a payload over the limit, 400 otherwise; 503 when the store failed. */
function refusal(error: unknown, eventId: string): Response {
  if (!(error instanceof BatchRejectedError)) {
    return answer(503, { error: 'the store could not take the event; retry' });
  }
  return refusedFor(error.issues.map((i) => i.reason).join('; '), eventId);
}

/** The answer for an event refused for `reason`. */
function refusedFor(reason: string, eventId: string): Response {
  if (/different payload/.test(reason)) {
    return answer(409, {
      error: `event ${eventId} is stored with a different payload`,
      event_id: eventId,
    });
  }
  if (/bytes in canonical form/.test(reason)) return answer(413, { error: reason });
  return answer(400, { error: reason });
}

/** The body, or null past `max` bytes. */
async function readBody(request: Request, max: number): Promise<Uint8Array | null> {
  // A declared length (over `max` already refused by the caller) lets the body be read
  // whole, without a stream's per-chunk cost; its size is checked again, not trusted.
  if (request.headers.has('content-length')) {
    const body = await request.bytes();
    return body.length > max ? null : body;
  }
  const reader = request.body?.getReader();
  if (reader === undefined) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > max) {
      reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return new Uint8Array(Buffer.concat(chunks));
}
