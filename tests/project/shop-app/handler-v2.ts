import { ledgerHandler } from './ledger.ts';

export const version = 'ledger-2';
export const handle = ledgerHandler(['EUR', 'USD', 'GBP']);
