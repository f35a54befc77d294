/**
 * Event id policies: which `event_id` strings a store accepts. Chosen when the store is
 * created, recorded in it (`onceq_meta.id_policy`), checked by every enqueue.
 *
 * - `lesson` (the default): `E` and four ASCII digits, `E0000`…`E9999`, exactly the
 *   lesson's format, so the demo, the exercises and the tests keep their meaning.
 * - `general`: 1 to 200 bytes of printable ASCII without spaces, i.e. every byte in
 *   `0x21` (`!`) … `0x7E` (`~`). UUIDs, `evt_3Q9x…`, `orders-17:883421` all fit.
 * - `pattern:<regex>`: a JavaScript regular expression the operator gives, matched
 *   against the **whole** id (it is anchored: `^(?:<regex>)$`, no flags), on top of the
 *   `general` rule (an id is always printable ASCII, 1–200 bytes). The regex source is at
 *   most 200 characters.
 *
 * The database CHECK on `messages.event_id` enforces the `general` envelope on both
 * backends (migration 0003); the policy itself is enforced by enqueue.
 */
import { OnceqError } from '../errors.ts';

export const ID_POLICY_KINDS = ['lesson', 'general', 'pattern'] as const;
export type IdPolicyKind = (typeof ID_POLICY_KINDS)[number];

export type IdPolicy =
  | { readonly kind: 'lesson' }
  | { readonly kind: 'general' }
  | { readonly kind: 'pattern'; readonly source: string };

/** Longest event id any policy accepts, in bytes (ASCII: bytes = characters). */
export const MAX_EVENT_ID_BYTES = 200;
/** Longest regex source a `pattern:` policy may carry. */
export const MAX_PATTERN_LENGTH = 200;

export const LESSON_POLICY: IdPolicy = Object.freeze({ kind: 'lesson' });
export const GENERAL_POLICY: IdPolicy = Object.freeze({ kind: 'general' });

/** A policy string that is not `lesson`, `general` or a valid `pattern:<regex>`. Exit code 2. */
export class InvalidIdPolicyError extends OnceqError {
  constructor(text: string, why: string) {
    super(
      'invalid_id_policy',
      2,
      `invalid id policy ${JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text)}: ${why}`,
    );
  }
}

/** Parses `lesson`, `general` or `pattern:<regex>`. Throws {@link InvalidIdPolicyError}. */
export function parseIdPolicy(text: string): IdPolicy {
  if (text === 'lesson') return LESSON_POLICY;
  if (text === 'general') return GENERAL_POLICY;
  if (text.startsWith('pattern:')) {
    const source = text.slice('pattern:'.length);
    if (source.length === 0) throw new InvalidIdPolicyError(text, 'the pattern is empty');
    if (source.length > MAX_PATTERN_LENGTH) {
      throw new InvalidIdPolicyError(
        text,
        `the pattern is ${source.length} characters, the limit is ${MAX_PATTERN_LENGTH}`,
      );
    }
    try {
      new RegExp(`^(?:${source})$`);
    } catch (error) {
      throw new InvalidIdPolicyError(
        text,
        `not a valid regular expression (${(error as Error).message})`,
      );
    }
    return Object.freeze({ kind: 'pattern', source });
  }
  throw new InvalidIdPolicyError(text, 'use lesson, general or pattern:<regex>');
}

/** The stored and printed form: `lesson`, `general` or `pattern:<regex>`. */
export function formatIdPolicy(policy: IdPolicy): string {
  return policy.kind === 'pattern' ? `pattern:${policy.source}` : policy.kind;
}

/** What the policy accepts, in words, for error messages and `--help`. */
export function describeIdPolicy(policy: IdPolicy): string {
  switch (policy.kind) {
    case 'lesson':
      return 'E followed by four digits, E0000 to E9999';
    case 'general':
      return `1 to ${MAX_EVENT_ID_BYTES} printable ASCII characters, no spaces`;
    case 'pattern':
      return `the whole id matches /${policy.source}/, printable ASCII, at most ${MAX_EVENT_ID_BYTES} characters`;
  }
}

/** A predicate for one policy; compile once per batch, call per id. */
export function idMatcher(policy: IdPolicy): (id: string) => boolean {
  switch (policy.kind) {
    case 'lesson':
      return isLessonId;
    case 'general':
      return isGeneralId;
    case 'pattern': {
      const re = new RegExp(`^(?:${policy.source})$`);
      return (id) => isGeneralId(id) && re.test(id);
    }
  }
}

/** `E` and four ASCII digits. */
export function isLessonId(s: string): boolean {
  if (s.length !== 5 || s.charCodeAt(0) !== 0x45 /* E */) return false;
  for (let i = 1; i < 5; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** 1–200 characters, each `!` (0x21) … `~` (0x7E): printable ASCII without space. */
export function isGeneralId(s: string): boolean {
  if (s.length === 0 || s.length > MAX_EVENT_ID_BYTES) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

/** Why `id` does not fit: one clause naming the policy, for a batch issue. */
export function idRefusal(id: string, policy: IdPolicy): string {
  const shown = JSON.stringify(id.length > 40 ? `${id.slice(0, 40)}…` : id);
  if (policy.kind === 'lesson') {
    // The lesson's sentence, plus the policy that refused it.
    return `event_id ${shown} must match E followed by four digits (E0000 to E9999) under the store's id policy lesson`;
  }
  return `event_id ${shown} does not fit the store's id policy ${formatIdPolicy(policy)} (${describeIdPolicy(policy)})`;
}
