import type { MessageState } from './states.ts';

/** Row types of the store, shared by both backends (SQLite and PostgreSQL). */
export interface MessagesTable {
  event_id: string;
  /** Canonical JSON text of the payload (docs/protocol.md §2). */
  payload: string;
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
}

export interface EffectsTable {
  event_id: string;
  category: string;
  amount_cents: number;
  created_at: number;
}

export interface Database {
  messages: MessagesTable;
  effects: EffectsTable;
}
