// The conformance suite on PostgreSQL: `DATABASE_URL`, a fresh schema per test.
// Without DATABASE_URL it skips visibly, unless ONCEQ_REQUIRE_POSTGRES=1 (scripts/test.sh
// sets it when it started a cluster, and CI sets it) makes the absence a failure.
import { test } from 'bun:test';
import { exerciseBackend, exerciseGeneralPolicy } from './conformance/index.ts';
import { postgresFactory } from './support/factories.ts';

const available = postgresFactory.available();
if (available === true) {
  exerciseBackend('postgres', postgresFactory);
  exerciseGeneralPolicy('postgres', postgresFactory);
} else if (process.env.ONCEQ_REQUIRE_POSTGRES === '1') {
  test('postgres: the PostgreSQL suite is required (ONCEQ_REQUIRE_POSTGRES=1)', () => {
    throw new Error(`postgres: ${available}; ONCEQ_REQUIRE_POSTGRES=1 forbids skipping`);
  });
} else {
  test.skip(`postgres: ${available} … suite skipped`, () => {});
}
