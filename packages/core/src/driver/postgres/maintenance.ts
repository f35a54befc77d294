import type { MaintenanceDriver } from '../driver.ts';
import { schemas } from './sql/schema.ts';
import { statisticsProbe } from './sql/statistics.ts';

/** PostgreSQL's maintenance statements (driver/driver.ts). */
export const postgresMaintenance: MaintenanceDriver = {
  // The server checks its own pages; foreign keys are enforced, never deferred.
  storageProbes: [],
  plannerProbes: [statisticsProbe],
  schemas,
  async lockForRecount(x) {
    // Waits for running writes and blocks new ones until COMMIT.
    await x.query('LOCK TABLE messages, effects IN SHARE MODE');
  },
  // Autovacuum gives space back; a manual VACUUM FULL would lock the tables for its run.
  vacuum: async () => false,
  async copyTo() {
    throw new TypeError('a PostgreSQL store is copied with pg_dump, not by onceq');
  },
};
