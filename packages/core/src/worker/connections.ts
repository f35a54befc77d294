import type { Store } from '../driver/backend.ts';
import type { WorkerLog } from './log.ts';
import type { MetricsRecorder } from './metrics-recorder.ts';

/**
 * Where the store has a pool (PostgreSQL): reports its connections in `metrics`, and
 * says once per worker, in its log, that the server refused a connection and the worker
 * works on with what it holds.
 */
export function watchConnections(store: Store, log: WorkerLog, metrics?: MetricsRecorder): void {
  const connections = store.connections;
  if (connections === undefined) return;
  metrics?.watchConnections?.(() => connections.use());
  let said = false;
  connections.onShort((use) => {
    if (said) return;
    said = true;
    log.write(
      'connections_short',
      `PostgreSQL refused a new connection: this worker holds ${use.held} of the ${use.max} it may open and works on with them (lease extensions first, no claim ahead) until one opens; keep every process's connections under max_connections (see the connection budget in docs/postgres.md)`,
      { held: use.held, max: use.max, refused: use.refused },
    );
  });
}

/**
 * Whether the worker may claim a batch ahead now: only when the store would give that
 * claim a connection at once (an idle one, or room to open one), so a worker never
 * holds leases it has no connection to settle. Stores without a pool always may.
 */
export function mayClaimAhead(store: Store): boolean {
  return store.connections?.spare() ?? true;
}
