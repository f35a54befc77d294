import { ledgerHandler } from './ledger.ts';

export const version = 'ledger-1';
export const handle = ledgerHandler(['EUR', 'USD']);
