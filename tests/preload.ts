import { setDefaultTimeout } from 'bun:test';

// Tests that spawn processes or start servers need more than bun's 5 s default.
// bun 1.4.4 applies this to the first test file of a run only: `bun run test` also
// passes --timeout 60000 (scripts/test.sh); do the same when running several files.
setDefaultTimeout(60_000);
