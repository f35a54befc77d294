import { setDefaultTimeout } from 'bun:test';

// Tests that spawn processes or start servers need more than bun's 5 s default.
setDefaultTimeout(60_000);
