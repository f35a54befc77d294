/** The id-policy, tombstone and dedup-window checks enqueue runs inside its transaction. */
import { createHash } from 'node:crypto';
import { type BatchIssue, BatchRejectedError, type RejectionUnit } from '../errors.ts';
import { type BatchEntry, MAX_BATCH_ISSUES } from '../input/batch.ts';
import { idMatcher, idRefusal, LESSON_POLICY, parseIdPolicy } from '../input/id-policy.ts';
import { localTime } from '../local-time.ts';

/**
 * Rejects the batch when an entry's id does not fit the store's policy (`policyText`
 * from `onceq_meta`; a store without the row is `lesson`). Each issue names the line
 * and the policy.
 */
export function checkIds(
  entries: readonly BatchEntry[],
  policyText: string | undefined,
  unit: RejectionUnit = {},
): void {
  const policy = policyText === undefined ? LESSON_POLICY : parseIdPolicy(policyText);
  const fits = idMatcher(policy);
  const issues: BatchIssue[] = [];
  for (const entry of entries) {
    if (!fits(entry.eventId))
      issues.push({ line: entry.line, reason: idRefusal(entry.eventId, policy) });
  }
  if (issues.length > MAX_BATCH_ISSUES) {
    const more = issues.length - MAX_BATCH_ISSUES;
    issues.splice(MAX_BATCH_ISSUES, more, {
      line: 0,
      reason: `… and ${more} more problem${more === 1 ? '' : 's'}`,
    });
  }
  if (issues.length > 0) throw new BatchRejectedError(issues, unit);
}

/** Hex SHA-256 of a canonical payload's UTF-8 bytes: what a tombstone keeps. */
export function payloadSha256(canonical: string): string {
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}

/** The conflict issue for a repeat of a pruned event with a different payload. */
export function prunedConflict(entry: BatchEntry, prunedAt: number | null): BatchIssue {
  const when = prunedAt === null ? '' : ` at ${localTime(Number(prunedAt))}`;
  return {
    line: entry.line,
    reason: `event_id ${entry.eventId} conflicts with a pruned message: the original was pruned${when} and only its payload's SHA-256 is kept, which differs from this payload (a correction needs a new event id)`,
  };
}

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/**
 * The time a UUIDv7 carries (RFC 9562: its first 48 bits, Unix milliseconds), or
 * undefined for any other id: the one kind of id whose age onceq can read.
 */
export function uuidV7Millis(eventId: string): number | undefined {
  if (eventId.length !== 36 || !UUID_V7.test(eventId)) return undefined;
  return Number.parseInt(eventId.slice(0, 8) + eventId.slice(9, 13), 16);
}

/**
 * The entries whose id is a UUIDv7 made before `forgottenBefore` (Unix seconds): their
 * tombstone may have been forgotten, so when the store does not hold them a repeat could
 * not be told from a new event.
 */
export function madeBeforeWindow(
  entries: readonly BatchEntry[],
  forgottenBefore: number,
): BatchEntry[] {
  const horizon = forgottenBefore * 1000;
  return entries.filter((entry) => {
    const made = uuidV7Millis(entry.eventId);
    return made !== undefined && made < horizon;
  });
}

/** The refusal of a time-ordered id made before the store's dedup window. */
export function beforeWindow(entry: BatchEntry, forgottenBefore: number): BatchIssue {
  const made = Math.floor((uuidV7Millis(entry.eventId) as number) / 1000);
  return {
    line: entry.line,
    reason: `event_id ${entry.eventId} was made at ${localTime(made)}, before the store's dedup window: events finished before ${localTime(forgottenBefore)} have been forgotten (prune --forget-older-than), so a repeat of it could not be recognised and is refused rather than risk applying it twice`,
  };
}
