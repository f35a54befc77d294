import type { BackendKind } from '../driver/backend.ts';

/**
 * Each message records the attempt limit of its last claim: `max_attempts`, stamped by
 * every claim from the claiming worker's policy, as `on_dead` is (0010). So what must hold
 * after that worker is gone goes by the rule the message was claimed under, whatever
 * policy other workers run: a claim's lazy recovery sends an expired lease back to ready
 * only while `attempts < max_attempts`, and `onceq doctor`'s `attempts_out_of_bounds`
 * bounds `attempts` by it (a store worked with `--attempts 10` is not a store with three).
 *
 * A message enqueued from now on starts at 3, the lesson's limit, until its first claim.
 * Messages stored before get the least limit their own state proves, and at least 3: a
 * ready or waiting message has attempts left (`attempts + 1`), any other has used at most
 * its limit (`attempts`). Only rows past 3 attempts are rewritten.
 */
const backfill = (max: string) => `UPDATE messages
  SET max_attempts = ${max}(3, CASE WHEN state IN ('ready', 'waiting') THEN attempts + 1 ELSE attempts END)
  WHERE attempts >= 3`;

export const claimAttemptsSchema: Record<BackendKind, readonly string[]> = {
  sqlite: [
    `ALTER TABLE messages ADD COLUMN max_attempts INTEGER NOT NULL DEFAULT 3
      CHECK (max_attempts >= 1)`,
    backfill('max'),
  ],
  postgres: [
    `ALTER TABLE messages ADD COLUMN max_attempts INTEGER NOT NULL DEFAULT 3
      CHECK (max_attempts >= 1)`,
    backfill('greatest'),
  ],
};
