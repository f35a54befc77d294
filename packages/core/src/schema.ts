import type { MessageState } from './states.ts';

/** Row types of the store, shared by both backends (SQLite and PostgreSQL). */
export interface MessagesTable {
  event_id: string;
  /**
   * Canonical JSON text of the payload (docs/protocol.md §2); `null` once pruned (`pruned_at` set),
   * when only {@link MessagesTable.payload_sha256} remains for dedup.
   */
  payload: string | null;
  state: MessageState;
  attempts: number;
  generation: number;
  available_at: number;
  /** Set exactly when `state = 'leased'` (a CHECK constraint pins this). */
  lease_until: number | null;
  last_error_code: string | null;
  last_error_detail: string | null;
  enqueued_at: number;
  updated_at: number;
  /** Hex SHA-256 of the canonical payload, set exactly when pruned (migration 0003). */
  payload_sha256: string | null;
  /** When `onceq prune` removed the payload; `null` while the payload is stored. */
  pruned_at: number | null;
  /** The message's ordering key (migration 0008), `null` for a message without one. */
  ordering_key: string | null;
  /** Its position in its key, from 1 in enqueue order; set exactly when the key is. */
  seq: number | null;
}

/**
 * A keyed message's position in its key (migration 0019): a key's order, written when a
 * message joins its key, never by a change of its state.
 */
export interface MessageKeysTable {
  queue: string;
  ordering_key: string;
  seq: number;
  event_id: string;
}

export interface EffectsTable {
  event_id: string;
  category: string;
  amount_cents: number;
  created_at: number;
}

/**
 * onceq's record of a done message whose handler returned a completion of its own
 * (migration 0005): the user's rows live in the user's tables; this row says the message
 * was handled, with the completion's summary. Every done message has exactly one
 * recorded outcome: an `effects` row (the money effect) or a `completions` row.
 */
export interface CompletionsTable {
  event_id: string;
  summary: string | null;
  created_at: number;
}

/** Store-wide settings (migration 0003): `id_policy`. */
export interface MetaTable {
  key: string;
  value: string;
}

export interface Database {
  messages: MessagesTable;
  message_keys: MessageKeysTable;
  effects: EffectsTable;
  completions: CompletionsTable;
  onceq_meta: MetaTable;
}
