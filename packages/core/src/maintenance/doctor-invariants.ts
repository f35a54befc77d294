/**
 * The doctor's data checks: the protocol's invariants, read with plain SQL
 * (driver/sql/invariants.ts) so a row written around the protocol (direct SQL, a
 * restored file, a dropped CHECK) is caught.
 */
import type { Store } from '../driver/backend.ts';
import type { InvariantCheck } from '../driver/sql/invariants.ts';
import { formatIdPolicy, parseIdPolicy } from '../input/id-policy.ts';
import type { Finding } from './doctor-types.ts';
import { findOffenders, readIdPolicyText } from './meta.ts';

/** Example ids named per finding. */
const EXAMPLES = 5;

interface Invariant {
  check: InvariantCheck;
  /** What the rows are. */
  noun: 'message' | 'effect' | 'completion' | 'position';
  /** What is wrong with each row found, completing "N messages …". */
  what: string;
}

/** Every invariant the protocol keeps; its SQL is the driver's (`Driver.violations`). */
export const INVARIANTS: readonly Invariant[] = [
  {
    check: 'done_without_outcome',
    noun: 'message',
    what: 'done without a recorded outcome (every done message has exactly one: an effect or a completion)',
  },
  {
    check: 'two_outcomes',
    noun: 'message',
    what: 'with both an effect and a completion (a done message has exactly one outcome)',
  },
  {
    check: 'outcome_without_done',
    noun: 'message',
    what: 'with a recorded outcome but not done (only done messages have one)',
  },
  { check: 'effect_without_message', noun: 'effect', what: 'without a message' },
  { check: 'completion_without_message', noun: 'completion', what: 'without a message' },
  {
    check: 'lease_mismatch',
    noun: 'message',
    what: "breaking leased ⇔ lease_until (a lease_until exactly when state = 'leased')",
  },
  {
    check: 'attempts_out_of_bounds',
    noun: 'message',
    what: 'with attempts out of bounds (0 ≤ attempts ≤ the max attempts its last claim allowed, and ≤ generation; ready below that max)',
  },
  {
    check: 'tombstone_inconsistent',
    noun: 'message',
    what: 'with an inconsistent tombstone (pruned: no payload, a 64-hex SHA-256, done, dead or skipped; else a payload, no hash)',
  },
  {
    check: 'key_two_heads',
    noun: 'message',
    what: 'ready, leased or dead beside another such message of its ordering key (a key has one head at a time)',
  },
  {
    check: 'key_stuck',
    noun: 'message',
    what: 'waiting with nothing unfinished before it in its ordering key (it would never be handed out)',
  },
  {
    check: 'key_position_mismatch',
    noun: 'message',
    what: "with an ordering key but not at its own position in its key's order (PostgreSQL: message_keys)",
  },
  {
    check: 'key_position_orphan',
    noun: 'position',
    what: "in an ordering key's order whose message is gone (PostgreSQL: message_keys; the key's later messages wait behind it)",
  },
];

/** Runs every invariant; one finding per broken one, with its count and examples. */
export async function checkInvariants(store: Store): Promise<Finding[]> {
  const findings: Finding[] = [];
  for (const invariant of INVARIANTS) {
    const { n, ids } = await store.read((x) =>
      store.driver.violations(x, invariant.check, EXAMPLES),
    );
    if (n === 0) continue;
    findings.push({
      check: invariant.check,
      severity: 'problem',
      message: `${n} ${invariant.noun}${n === 1 ? '' : 's'} ${invariant.what}: ${ids.join(', ')}${n > ids.length ? ', …' : ''}`,
    });
  }
  return findings;
}

/** The recorded id policy is readable, and every stored id fits it. */
export async function checkIdPolicy(store: Store): Promise<Finding[]> {
  const text = await readIdPolicyText(store);
  const finding = (message: string): Finding[] => [
    { check: 'id_policy', severity: 'problem', message },
  ];
  if (text === null) return finding('the store records no id policy (onceq_meta.id_policy)');
  let policy: ReturnType<typeof parseIdPolicy>;
  try {
    policy = parseIdPolicy(text);
  } catch (error) {
    return finding(`the recorded id policy is unreadable: ${(error as Error).message}`);
  }
  const { refused, offenders } = await store.read((x) => findOffenders(store, x, policy));
  if (refused === 0) return [];
  return finding(
    `${refused} stored event id${refused === 1 ? '' : 's'} do not fit the store's id policy ${formatIdPolicy(policy)}: ${offenders.map((id) => JSON.stringify(id)).join(', ')}${refused > offenders.length ? ', …' : ''}`,
  );
}

/**
 * Leases that ran out long ago: lazy recovery only happens on a claim, so a lease
 * expired for `staleSeconds` means nothing has claimed for that long. A warning.
 */
export async function checkStaleLeases(store: Store, staleSeconds: number): Promise<Finding[]> {
  const cutoff = store.clock() - staleSeconds;
  const { n, oldest } = await store.read((x) => store.driver.expiredLeases(x, cutoff));
  if (n === 0) return [];
  const age = store.clock() - oldest;
  return [
    {
      check: 'stale_leases',
      severity: 'warning',
      message: `${n} lease${n === 1 ? '' : 's'} expired more than ${staleSeconds} s ago (oldest ${age} s): no claims running? A claim (onceq work) recovers them`,
    },
  ];
}
