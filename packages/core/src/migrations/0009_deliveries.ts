import type { BackendKind } from '../driver/backend.ts';

/**
 * Webhooks out: the outbox (see delivery/).
 *
 * - `deliveries`: one row per webhook a completion declared (`deliver`), written by the
 *   completion's `insert` rows in the ACK's transaction, so a row exists if and only if
 *   its message is done. `(event_id, key)` is its identity and the `webhook-id` every
 *   attempt carries. `state` is `pending` (waiting for `available_at`), `leased` (one
 *   sender's attempt is running; `generation` fences its outcome like a message's),
 *   `delivered` or `dead` (its retry schedule ran out). The body is stored as the bytes
 *   sent. `available_at` defaults to 0: a new delivery is due at once, and the ACK's
 *   rows carry no clock reading of their own.
 * - `delivery_attempts`: every attempt, keyed by the generation of its lease (attempts
 *   restart at a redrive; generations never do): its time, HTTP status or error,
 *   latency and an excerpt of the response.
 * - `disabled_endpoints`: an endpoint that answered 410 Gone, and when. Its deliveries
 *   wait (listed by `onceq deliveries`) until the operator enables it again.
 */
export const deliveriesSchema: Record<BackendKind, readonly string[]> = {
  sqlite: [
    `CREATE TABLE deliveries (
      event_id TEXT NOT NULL REFERENCES messages (event_id),
      key TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 64 AND key NOT GLOB '*[^A-Za-z0-9_.-]*'),
      endpoint TEXT NOT NULL CHECK (length(endpoint) BETWEEN 1 AND 64 AND endpoint NOT GLOB '*[^A-Za-z0-9_-]*'),
      body TEXT NOT NULL,
      state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'leased', 'delivered', 'dead')),
      attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
      generation INTEGER NOT NULL DEFAULT 0 CHECK (generation >= 0),
      available_at INTEGER NOT NULL DEFAULT 0 CHECK (available_at >= 0),
      lease_until INTEGER CHECK (lease_until >= 0),
      last_status INTEGER,
      last_error TEXT,
      finished_at INTEGER,
      PRIMARY KEY (event_id, key),
      CHECK ((state = 'leased') = (lease_until IS NOT NULL)),
      CHECK ((state IN ('delivered', 'dead')) = (finished_at IS NOT NULL))
    ) STRICT`,
    `CREATE INDEX deliveries_due ON deliveries (endpoint, available_at) WHERE state = 'pending'`,
    `CREATE INDEX deliveries_lease ON deliveries (endpoint, lease_until) WHERE state = 'leased'`,
    `CREATE INDEX deliveries_dead ON deliveries (endpoint) WHERE state = 'dead'`,
    `CREATE TABLE delivery_attempts (
      event_id TEXT NOT NULL,
      key TEXT NOT NULL,
      generation INTEGER NOT NULL CHECK (generation >= 1),
      attempt INTEGER NOT NULL CHECK (attempt >= 1),
      at INTEGER NOT NULL,
      status INTEGER,
      latency_ms INTEGER NOT NULL CHECK (latency_ms >= 0),
      response TEXT,
      error TEXT,
      PRIMARY KEY (event_id, key, generation),
      FOREIGN KEY (event_id, key) REFERENCES deliveries (event_id, key)
    ) STRICT`,
    `CREATE TABLE disabled_endpoints (
      endpoint TEXT NOT NULL PRIMARY KEY,
      disabled_at INTEGER NOT NULL,
      reason TEXT NOT NULL
    ) STRICT`,
  ],
  postgres: [
    `CREATE TABLE deliveries (
      event_id TEXT NOT NULL REFERENCES messages (event_id),
      key TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 64 AND key !~ '[^A-Za-z0-9_.-]'),
      endpoint TEXT NOT NULL CHECK (length(endpoint) BETWEEN 1 AND 64 AND endpoint !~ '[^A-Za-z0-9_-]'),
      body TEXT NOT NULL,
      state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'leased', 'delivered', 'dead')),
      attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
      generation INTEGER NOT NULL DEFAULT 0 CHECK (generation >= 0),
      available_at BIGINT NOT NULL DEFAULT 0 CHECK (available_at >= 0),
      lease_until BIGINT CHECK (lease_until >= 0),
      last_status INTEGER,
      last_error TEXT,
      finished_at BIGINT,
      PRIMARY KEY (event_id, key),
      CHECK ((state = 'leased') = (lease_until IS NOT NULL)),
      CHECK ((state IN ('delivered', 'dead')) = (finished_at IS NOT NULL))
    )`,
    `CREATE INDEX deliveries_due ON deliveries (endpoint, available_at) WHERE state = 'pending'`,
    `CREATE INDEX deliveries_lease ON deliveries (endpoint, lease_until) WHERE state = 'leased'`,
    `CREATE INDEX deliveries_dead ON deliveries (endpoint) WHERE state = 'dead'`,
    `CREATE TABLE delivery_attempts (
      event_id TEXT NOT NULL,
      key TEXT NOT NULL,
      generation INTEGER NOT NULL CHECK (generation >= 1),
      attempt INTEGER NOT NULL CHECK (attempt >= 1),
      at BIGINT NOT NULL,
      status INTEGER,
      latency_ms INTEGER NOT NULL CHECK (latency_ms >= 0),
      response TEXT,
      error TEXT,
      PRIMARY KEY (event_id, key, generation),
      FOREIGN KEY (event_id, key) REFERENCES deliveries (event_id, key)
    )`,
    `CREATE TABLE disabled_endpoints (
      endpoint TEXT NOT NULL PRIMARY KEY,
      disabled_at BIGINT NOT NULL,
      reason TEXT NOT NULL
    )`,
  ],
};
