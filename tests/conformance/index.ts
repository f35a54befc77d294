/**
 * The onceq conformance suite: written once, run against every backend (River's
 * `riverdrivertest.Exercise` pattern). A backend change extends this suite first.
 *
 * Every test gets a fresh, empty store from the factory on a model clock at 1000; only
 * the clock is modelled. Nothing here may ask which backend it runs on: differences come
 * through the {@link BackendFactory}.
 */
import { parseIdPolicy } from '@onceq/core/internal';
import type { BackendFactory } from '../support/factories.ts';
import { applySuite } from './apply.ts';
import { applyFaultsSuite } from './apply-faults.ts';
import { batchSuite } from './batch.ts';
import { claimSuite } from './claim.ts';
import { completeSuite } from './complete.ts';
import { dedupWindowSuite } from './dedup-window.ts';
import { enqueueSuite } from './enqueue.ts';
import { failuresSuite } from './failures.ts';
import { fenceSuite } from './fence.ts';
import { idPolicySuite } from './id-policy.ts';
import { leaseServiceSuite } from './lease-service.ts';
import { listSuite } from './list.ts';
import { orderingSuite } from './ordering.ts';
import { policySuite } from './policy.ts';
import { processesSuite } from './processes.ts';
import { pruneSuite } from './prune.ts';
import { queuesSuite } from './queues.ts';
import { redriveSuite } from './redrive.ts';
import { storySuite } from './story.ts';

export function exerciseBackend(name: string, factory: BackendFactory): void {
  enqueueSuite(name, factory);
  claimSuite(name, factory);
  applySuite(name, factory);
  applyFaultsSuite(name, factory);
  failuresSuite(name, factory);
  fenceSuite(name, factory);
  completeSuite(name, factory);
  leaseServiceSuite(name, factory);
  redriveSuite(name, factory);
  listSuite(name, factory);
  batchSuite(name, factory);
  processesSuite(name, factory);
  storySuite(name, factory);
  idPolicySuite(name, factory);
  pruneSuite(name, factory);
  dedupWindowSuite(name, factory);
  orderingSuite(name, factory);
  policySuite(name, factory);
  queuesSuite(name, factory);
}

/**
 * The suites that read or write event ids by policy again, on stores created with the
 * `general` id policy (the suites above run on `lesson`, the default): enqueue
 * (duplicates, conflicts), prune (tombstones) and the whole demo story must mean the same
 * whatever the policy. Claim, apply, failures and redrive never look at an id's form, so
 * they are not repeated (about 1 s per test on PostgreSQL); the id-policy suite above
 * covers the real-id formats.
 */
export function exerciseGeneralPolicy(name: string, factory: BackendFactory): void {
  const general = withIdPolicy(factory, 'general');
  const label = `${name} (id policy general)`;
  enqueueSuite(label, general);
  pruneSuite(label, general);
  storySuite(label, general);
}

/** The factory's fresh store, created with `policy` through `openStore`'s option. */
function withIdPolicy(factory: BackendFactory, policy: string): BackendFactory {
  return { ...factory, open: (clock) => factory.open(clock, parseIdPolicy(policy)) };
}
