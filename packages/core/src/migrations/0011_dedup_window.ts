import type { BackendKind } from '../driver/backend.ts';

/**
 * The dedup window (docs/operations.md, "The dedup window"): `onceq_meta` records how far
 * the store has forgotten, key `forgotten_before`, a Unix second as text. Tombstones of
 * messages finished before it may have been deleted by `prune --forget-older-than`; `0`
 * (every store until its first forget) means nothing was ever forgotten. Enqueue reads
 * it to refuse a time-ordered id (UUIDv7) made before it that the store no longer holds.
 */
const statement = `INSERT INTO onceq_meta (key, value) VALUES ('forgotten_before', '0')
  ON CONFLICT (key) DO NOTHING`;

export const dedupWindowSchema: Record<BackendKind, readonly string[]> = {
  sqlite: [statement],
  postgres: [statement],
};
