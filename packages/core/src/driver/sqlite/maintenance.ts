import type { MaintenanceDriver } from '../driver.ts';
import { foreignKeyProbe, integrityProbe } from './sql/integrity.ts';
import { schemas } from './sql/schema.ts';
import { copyTo, vacuum } from './sql/vacuum.ts';

/** SQLite's maintenance statements (driver/driver.ts). */
export const sqliteMaintenance: MaintenanceDriver = {
  storageProbes: [integrityProbe, foreignKeyProbe],
  plannerProbes: [],
  schemas,
  // BEGIN IMMEDIATE already holds the one write lock.
  lockForRecount: async () => {},
  vacuum,
  copyTo,
};
