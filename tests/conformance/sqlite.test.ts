// The conformance suite on SQLite: a fresh file per test, real child processes.

import { sqliteFactory } from '../support/factories.ts';
import { exerciseBackend, exerciseGeneralPolicy } from './index.ts';

exerciseBackend('sqlite', sqliteFactory);
exerciseGeneralPolicy('sqlite', sqliteFactory);
