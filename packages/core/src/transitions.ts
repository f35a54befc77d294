/**
 * Kept for modules that still import `stateLiteral` from here (streams/prune.ts,
 * protocol/snapshot.ts). The transitions themselves moved: the state machine is
 * machine.ts, the SQL is backend/{sqlite,postgres}/statements.ts behind the
 * backend/statements.ts interface. Import `stateLiteral` from
 * backend/shared-statements.ts in new code.
 */
export { stateLiteral } from './backend/shared-statements.ts';
