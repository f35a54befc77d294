import type { ConnectionCount } from '../../../maintenance/doctor-types.ts';
import type { Executor } from '../../executor.ts';

/**
 * The server's connections against its limit, server-wide as `max_connections` is:
 * client backends in use (every database, onceq's and everyone else's), the limit, and
 * the slots only superusers may take.
 */
export async function readConnections(x: Executor): Promise<ConnectionCount> {
  const { rows } = await x.query<{ in_use: number; max: number; reserved: number }>(
    `select (select count(*) from pg_stat_activity where backend_type = 'client backend') as in_use,
            current_setting('max_connections')::int as max,
            current_setting('superuser_reserved_connections')::int as reserved`,
  );
  const row = rows[0] as { in_use: number; max: number; reserved: number };
  return { inUse: Number(row.in_use), max: Number(row.max), reserved: Number(row.reserved) };
}
