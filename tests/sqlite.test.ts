// The conformance suite on SQLite: a fresh file per test, real child processes.
import { exerciseBackend, exerciseGeneralPolicy } from './conformance/index.ts';
import { sqliteFactory } from './support/factories.ts';

exerciseBackend('sqlite', sqliteFactory);
exerciseGeneralPolicy('sqlite', sqliteFactory);
