/**
 * The JSONL batch envelope (docs/protocol.md §2): the whole batch is validated before any transaction,
 * and one bad line rejects all of it with a {@link BatchRejectedError} naming every bad line.
 */
import { type BatchIssue, BatchRejectedError } from '../errors.ts';
import { canonicalize } from './canonical.ts';
import { type IdPolicy, idMatcher, idRefusal, LESSON_POLICY } from './id-policy.ts';
import { isJsonObject, type JsonValue } from './json-value.ts';
import { JsonParseError, parseJson } from './parse-json.ts';

/** A batch file holds at most this many bytes (docs/protocol.md §2). */
export const MAX_BATCH_BYTES = 1_000_000;
/** A batch holds at most this many non-empty lines (docs/protocol.md §2). */
export const MAX_BATCH_LINES = 1000;
/** A payload's canonical form is at most this many bytes of UTF-8 (docs/protocol.md §2). */
export const MAX_PAYLOAD_BYTES = 10_000;
/** A rejection lists at most this many issues, then one `… and N more problems` issue. */
export const MAX_BATCH_ISSUES = 20;

export interface BatchEntry {
  /** 1-based physical line number (blank lines count). */
  line: number;
  eventId: string;
  /** The payload's canonical JSON text. */
  payload: string;
  /** The ordering key (docs/ordering.md); absent for an event without one. */
  key?: string;
}

export interface ParsedBatch {
  /** Unique event ids, first occurrence kept, in input order. */
  entries: BatchEntry[];
  /** Lines repeating an earlier line's event_id with the same canonical payload. */
  duplicates: number;
  /** Non-empty lines (event objects: the events given). */
  lines: number;
  /** What a rejection's numbers count: JSONL lines (default), or event objects' positions. */
  unit?: 'line' | 'event';
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * Validate a JSONL batch and return its entries with canonical payloads.
 *
 * Rules (docs/protocol.md §2): at most 1,000,000 bytes (counted before decoding; a string is measured as
 * UTF-8); valid UTF-8, one BOM allowed at the very start; LF or CRLF line ends; lines holding
 * only JSON whitespace (space, tab, CR) are ignored but still count for line numbers; at most
 * 1000 non-empty lines; each line a strict JSON object with exactly the keys `event_id`
 * (`^E[0-9]{4}$`) and `payload` (an object whose canonical form is at most 10,000 bytes of
 * UTF-8); the same event_id twice with different canonical payloads is a conflict.
 *
 * Choice: a batch with no non-empty line at all (empty file, only blank lines) is rejected
 * ("the batch has no events") rather than accepted as a no-op, since it is almost always a
 * wrong file or an empty pipe.
 *
 * `idPolicy` (default `lesson`, the `^E[0-9]{4}$` above) says which event ids are valid; a
 * refused id's issue names the policy. `enqueue` checks the store's own policy again
 * inside its transaction, so a caller that parses before opening the store (the CLI)
 * may pass `general` here, the widest envelope.
 *
 * @throws BatchRejectedError listing every bad line (up to {@link MAX_BATCH_ISSUES}, then one
 * `… and N more problems` issue); line 0 marks a problem with the file as a whole.
 */
export function parseBatch(
  input: Uint8Array | string,
  idPolicy: IdPolicy = LESSON_POLICY,
): ParsedBatch {
  const fits = idMatcher(idPolicy);
  let text: string;
  if (typeof input === 'string') {
    const bytes = input.length > MAX_BATCH_BYTES / 3 ? Buffer.byteLength(input, 'utf8') : 0;
    if (bytes > MAX_BATCH_BYTES) throw tooBig(bytes, Buffer.from(input, 'utf8'));
    text = input.charCodeAt(0) === 0xfeff ? input.slice(1) : input;
  } else {
    if (input.byteLength > MAX_BATCH_BYTES) throw tooBig(input.byteLength, input);
    try {
      text = decoder.decode(input); // strips one leading BOM
    } catch {
      throw new BatchRejectedError([invalidUtf8Issue(input)]);
    }
  }

  const rawLines = text.split('\n');
  const collected = new BatchCollector('line');
  let lines = 0;

  for (let i = 0; i < rawLines.length; i++) {
    const raw = rawLines[i] as string;
    if (isBlank(raw)) continue;
    lines++;
    if (lines > MAX_BATCH_LINES) break;
    collected.add(i + 1, parseLine(raw, fits, idPolicy));
  }

  if (lines > MAX_BATCH_LINES) {
    let total = 0;
    for (const raw of rawLines) if (!isBlank(raw)) total++;
    throw new BatchRejectedError([
      {
        line: 0,
        reason: `the batch has ${total} non-empty lines, the limit is ${MAX_BATCH_LINES}`,
      },
    ]);
  }
  if (lines === 0) throw new BatchRejectedError([{ line: 0, reason: 'the batch has no events' }]);
  return collected.batch(lines);
}

/**
 * A batch's entries collected in input order, by the one rule of both inputs (JSONL lines
 * and event objects): the first occurrence of an event id is kept, a repeat with the same
 * canonical payload is a duplicate, a repeat with another payload is an issue naming the
 * first one.
 */
export class BatchCollector {
  readonly #issues: BatchIssue[] = [];
  readonly #entries: BatchEntry[] = [];
  readonly #seen = new Map<string, BatchEntry>();
  #duplicates = 0;

  /** `unit`: what the numbers of issues count (JSONL lines, or event objects' positions). */
  constructor(readonly unit: 'line' | 'event') {}

  /** Adds what line (or event) `line` came to: a valid entry, or the reason it is invalid. */
  add(line: number, parsed: { eventId: string; payload: string; key?: string } | string): void {
    if (typeof parsed === 'string') {
      this.#issues.push({ line, reason: parsed });
      return;
    }
    const first = this.#seen.get(parsed.eventId);
    if (first === undefined) {
      const entry: BatchEntry = { line, eventId: parsed.eventId, payload: parsed.payload };
      if (parsed.key !== undefined) entry.key = parsed.key;
      this.#seen.set(parsed.eventId, entry);
      this.#entries.push(entry);
    } else if (first.key !== parsed.key) {
      this.#issues.push({
        line,
        reason: `event_id ${parsed.eventId} conflicts with ${this.unit} ${first.line}: same event_id, different ordering key`,
      });
    } else if (first.payload === parsed.payload) {
      this.#duplicates++;
    } else {
      this.#issues.push({
        line,
        reason: `event_id ${parsed.eventId} conflicts with ${this.unit} ${first.line}: same event_id, different payload`,
      });
    }
  }

  /**
   * The parsed batch of `lines` non-empty lines (or events).
   * @throws BatchRejectedError listing every issue collected (capped), nothing written.
   */
  batch(lines: number): ParsedBatch {
    const issues = this.#issues;
    if (issues.length > 0) {
      const options = {
        problems: issues.length,
        ...(this.unit === 'event' ? { unit: this.unit, events: lines } : {}),
      };
      throw new BatchRejectedError(capIssues(issues), options);
    }
    const batch: ParsedBatch = { entries: this.#entries, duplicates: this.#duplicates, lines };
    if (this.unit === 'event') batch.unit = 'event';
    return batch;
  }
}

/** A valid line's event id and canonical payload, or the reason it is invalid. */
function parseLine(
  raw: string,
  fits: (id: string) => boolean,
  idPolicy: IdPolicy,
): { eventId: string; payload: string } | string {
  let value: JsonValue;
  try {
    value = parseJson(raw);
  } catch (error) {
    if (error instanceof JsonParseError) return `invalid JSON: ${error.reason}`;
    throw error;
  }
  if (!isJsonObject(value)) {
    return `a line must be a JSON object with event_id and payload, not ${kindOf(value)}`;
  }
  let keyCount = 0;
  for (const key in value) {
    if (key !== 'event_id' && key !== 'payload') {
      return `unexpected key ${quote(key)} (a line has exactly event_id and payload)`;
    }
    keyCount++;
  }
  if (keyCount !== 2) {
    const missing = value.event_id === undefined ? 'event_id' : 'payload';
    return `missing key "${missing}" (a line has exactly event_id and payload)`;
  }
  const eventId = value.event_id as JsonValue;
  if (typeof eventId !== 'string') return `event_id must be a string, not ${kindOf(eventId)}`;
  const payload = value.payload as JsonValue;
  return checkedEvent(eventId, payload, fits, idPolicy);
}

/**
 * An event id and a payload the strict parser returned, checked as a JSONL line's are
 * (the id fits the policy, the payload is an object of at most {@link MAX_PAYLOAD_BYTES}
 * in canonical form): the entry with its canonical payload, or the reason it is invalid.
 */
export function checkedEvent(
  eventId: string,
  payload: JsonValue,
  fits: (id: string) => boolean,
  idPolicy: IdPolicy,
): { eventId: string; payload: string } | string {
  if (!fits(eventId)) return idRefusal(eventId, idPolicy);
  if (!isJsonObject(payload)) return `payload must be a JSON object, not ${kindOf(payload)}`;
  const text = canonicalize(payload);
  // A UTF-16 code unit is at most 3 bytes of UTF-8: measure only when it could matter.
  if (text.length * 3 > MAX_PAYLOAD_BYTES) {
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > MAX_PAYLOAD_BYTES) {
      return `payload is ${bytes} bytes in canonical form, the limit is ${MAX_PAYLOAD_BYTES}`;
    }
  }
  return { eventId, payload: text };
}

/** Only JSON whitespace (space, tab, CR): an ignored line. */
function isBlank(line: string): boolean {
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}

function capIssues(issues: BatchIssue[]): BatchIssue[] {
  if (issues.length <= MAX_BATCH_ISSUES) return issues;
  const more = issues.length - MAX_BATCH_ISSUES;
  return [
    ...issues.slice(0, MAX_BATCH_ISSUES),
    { line: 0, reason: `… and ${more} more problem${more === 1 ? '' : 's'}` },
  ];
}

/**
 * The first line of `input` that alone is past the batch byte limit, as the issue to
 * report, or null. Such a line is the real problem of an oversized batch: its payload
 * cannot fit the payload limit, and splitting the file into batches of lines cannot
 * help. `input` may be the start of a longer file.
 */
export function oversizedLine(input: Uint8Array): BatchIssue | null {
  let start = 0;
  for (let line = 1; start < input.byteLength; line++) {
    const newline = input.indexOf(10, start);
    const end = newline === -1 ? input.byteLength : newline;
    if (end - start > MAX_BATCH_BYTES) {
      return {
        line,
        reason: `the line is more than ${MAX_BATCH_BYTES} bytes, more than a whole batch may hold; a payload may hold at most ${MAX_PAYLOAD_BYTES} bytes`,
      };
    }
    start = end + 1;
  }
  return null;
}

function tooBig(bytes: number, input: Uint8Array): BatchRejectedError {
  return new BatchRejectedError([
    oversizedLine(input) ?? {
      line: 0,
      reason: `the batch is ${bytes} bytes, the limit is ${MAX_BATCH_BYTES}`,
    },
  ]);
}

/** Locate the first invalid UTF-8 sequence, to name its line. Only runs on the error path. */
function invalidUtf8Issue(bytes: Uint8Array): BatchIssue {
  const at = firstInvalidUtf8(bytes);
  let line = 1;
  for (let i = 0; i < at; i++) if (bytes[i] === 0x0a) line++;
  return { line, reason: `invalid UTF-8 at byte ${at + 1} of the file` };
}

function firstInvalidUtf8(b: Uint8Array): number {
  const n = b.length;
  let i = 0;
  while (i < n) {
    const c = b[i] as number;
    if (c < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) need = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      if (c === 0xe0) lo = 0xa0;
      else if (c === 0xed) hi = 0x9f; // no UTF-16 surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      if (c === 0xf0) lo = 0x90;
      else if (c === 0xf4) hi = 0x8f;
    } else return i;
    if (i + need >= n) return i; // truncated sequence
    const second = b[i + 1] as number;
    if (second < lo || second > hi) return i;
    for (let k = 2; k <= need; k++) {
      const x = b[i + k] as number;
      if (x < 0x80 || x > 0xbf) return i;
    }
    i += need + 1;
  }
  return n; // not found (should not happen when the decoder refused the input)
}

function kindOf(value: JsonValue): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return isJsonObject(value) ? 'an object' : 'a number';
  if (typeof value === 'string') return 'a string';
  if (typeof value === 'boolean') return 'a boolean';
  return 'a number';
}

function quote(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}
