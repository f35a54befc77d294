import { isMissingPackage, MissingPackageError } from '../../errors.ts';

/**
 * The PostgreSQL driver, loaded on first use: it imports `pg`, an optional peer
 * dependency, so a SQLite-only application never needs it and a missing one is named in
 * one sentence.
 */
export async function loadPostgresDriver(): Promise<typeof import('./open.ts')> {
  try {
    return await import('./open.ts');
  } catch (error) {
    if (isMissingPackage(error, "'pg'") || isMissingPackage(error, ' pg')) {
      throw new MissingPackageError('pg', 'a postgres:// store', error);
    }
    throw error;
  }
}
