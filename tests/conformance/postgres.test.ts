// The conformance suite on PostgreSQL: `DATABASE_URL`, a fresh schema per test (an
// emptied one a test left unchanged, tests/support/pg-schemas.ts); whether
// it runs is the rule of tests/support/backends.ts (skipped visibly, required under CI).

import { onPostgres } from '../support/backends.ts';
import { postgresFactory } from '../support/factories.ts';
import { exerciseBackend, exerciseGeneralPolicy } from './index.ts';

onPostgres('the conformance suite', () => {
  exerciseBackend('postgres', postgresFactory);
  exerciseGeneralPolicy('postgres', postgresFactory);
});
