import { afterAll, setDefaultTimeout } from 'bun:test';
import { removePackedTarballs } from './support/packed.ts';
import { dropSpareSchemas } from './support/pg-schemas.ts';

// Tests that spawn processes or start servers need more than bun's 5 s default.
// bun 1.4.4 applies this to the first test file of a run only: `bun run test` also
// passes --timeout 120000 (scripts/test.sh); do the same when running several files.
setDefaultTimeout(120_000);

// The tarballs tests/support/packed.ts packs once for the whole run.
afterAll(removePackedTarballs);

// The emptied PostgreSQL schemas tests/support/pg-schemas.ts kept for the next test.
afterAll(dropSpareSchemas);
