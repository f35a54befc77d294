import { StoreUnavailableError } from '../../errors.ts';
import type { OpenStoreOptions, Store } from '../backend.ts';

/** PostgreSQL backend: being written (issue 4). */
export async function openPostgresStore(
  _url: string,
  _options: OpenStoreOptions = {},
): Promise<Store> {
  throw new StoreUnavailableError('the PostgreSQL backend is not available yet');
}
