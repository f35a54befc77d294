/**
 * The reference model of the model-based test (tests/model/model.test.ts): the protocol of
 * onceq in a few dozen lines of plain TypeScript, one map of messages and nothing else.
 * It knows nothing of SQL, transactions or backends; the test runs the same steps on the
 * real store and on this model and demands the same answers and the same state.
 */

/** Defaults of the protocol: 3 attempts a cycle, backoff 2^(attempt-1) seconds. */
export const MAX_ATTEMPTS = 3;
export const backoff = (attempt: number) => 2 ** Math.max(0, attempt - 1);

/** The payloads a step can enqueue: the text as sent and what the store must keep. */
export const PAYLOADS = [
  // 0 and 1 are the same payload written two ways (a duplicate, not a conflict).
  {
    text: '{"category":"book","amount_cents":100}',
    canonical: '{"amount_cents":100,"category":"book"}',
  },
  {
    text: '{ "amount_cents": 100, "category": "book" }',
    canonical: '{"amount_cents":100,"category":"book"}',
  },
  // Unknown to v1, accepted by v2: the redrive-after-upgrade story.
  {
    text: '{"category":"toy","amount_cents":300}',
    canonical: '{"amount_cents":300,"category":"toy"}',
  },
  // A float amount: a different payload from 100, and invalid for both handlers.
  {
    text: '{"category":"pen","amount_cents":100.0}',
    canonical: '{"amount_cents":100.0,"category":"pen"}',
  },
  // An extra field the handlers ignore; bytes beyond ASCII kept as they are.
  {
    text: '{"note":"über","category":"pen","amount_cents":200}',
    canonical: '{"amount_cents":200,"category":"pen","note":"über"}',
  },
] as const;

/** What a handler does with a payload in the model: an effect, or a failure. */
export type HandlerChoice = 'v1' | 'v2' | 'temporary' | 'permanent' | 'throw';

type Verdict =
  | { effect: { category: string; amountCents: number } }
  | { fail: 'temporary' | 'permanent'; code: string };

const V1 = new Set(['book', 'pen', 'bag']);
const V2 = new Set([...V1, 'toy']);

/** The model's handler: v1/v2 by the spec's rules, or a scripted failure. */
export function verdict(choice: HandlerChoice, canonical: string): Verdict {
  if (choice === 'temporary') return { fail: 'temporary', code: 'model_temporary' };
  if (choice === 'permanent') return { fail: 'permanent', code: 'model_permanent' };
  if (choice === 'throw') return { fail: 'temporary', code: 'handler_error' };
  const payload = PAYLOADS.find((p) => p.canonical === canonical);
  if (payload === undefined) throw new Error(`model: unknown payload ${canonical}`);
  const category = /"category":"(\w+)"/.exec(canonical)?.[1] ?? '';
  const amount = /"amount_cents":([0-9.]+)/.exec(canonical)?.[1] ?? '';
  const known = choice === 'v1' ? V1 : V2;
  if (!known.has(category) || !/^[0-9]+$/.test(amount)) {
    return { fail: 'permanent', code: 'invalid_payload' };
  }
  return { effect: { category, amountCents: Number(amount) } };
}

/** The ordering keys a step can give a batch (index 0: no key). */
export const KEYS = [null, 'A', 'B'] as const;

export interface ModelMessage {
  eventId: string;
  payload: string;
  state: 'ready' | 'leased' | 'done' | 'dead' | 'waiting' | 'skipped';
  /** Ordering key and position in it (docs/ordering.md); null without a key. */
  key: string | null;
  seq: number | null;
  attempts: number;
  generation: number;
  availableAt: number;
  leaseUntil: number | null;
  lastErrorCode: string | null;
  effect: { category: string; amountCents: number } | null;
}

export interface ModelLease {
  eventId: string;
  generation: number;
}

/** The whole model: messages by id and the clock. */
export class Model {
  readonly messages = new Map<string, ModelMessage>();
  now: number;
  constructor(now: number) {
    this.now = now;
  }

  /**
   * `'conflict'` (nothing written) or the counts; lines are [eventId, payload index], all
   * of ordering key `key`. A keyed message is ready only when no unfinished message of
   * its key exists (it is the head), else waiting.
   */
  enqueue(
    lines: readonly (readonly [string, number])[],
    key: string | null = null,
  ): 'conflict' | { accepted: number; duplicates: number } {
    const seen = new Map<string, string>();
    let accepted = 0;
    let duplicates = 0;
    for (const [id, p] of lines) {
      const canonical = (PAYLOADS[p] as (typeof PAYLOADS)[number]).canonical;
      const stored = this.messages.get(id);
      if (stored !== undefined && stored.key !== key) return 'conflict';
      const known = seen.get(id) ?? stored?.payload;
      if (known === undefined) {
        seen.set(id, canonical);
        accepted++;
      } else if (known === canonical) duplicates++;
      else return 'conflict';
    }
    for (const [id, canonical] of seen) {
      if (this.messages.has(id)) continue;
      const ofKey = key === null ? [] : this.ofKey(key);
      const head = !ofKey.some((m) => m.state !== 'done' && m.state !== 'skipped');
      this.messages.set(id, {
        eventId: id,
        payload: canonical,
        state: head ? 'ready' : 'waiting',
        key,
        seq: key === null ? null : ofKey.length + 1,
        attempts: 0,
        generation: 0,
        availableAt: this.now,
        leaseUntil: null,
        lastErrorCode: null,
        effect: null,
      });
    }
    return { accepted, duplicates };
  }

  /** Lazy recovery, then up to `limit` claims by (availableAt, eventId). */
  claim(limit: number, leaseSeconds: number): ModelLease[] {
    for (const m of this.messages.values()) {
      if (m.state === 'leased' && (m.leaseUntil as number) <= this.now) {
        m.lastErrorCode = 'lease_expired';
        if (m.attempts < MAX_ATTEMPTS) {
          m.state = 'ready';
          m.availableAt = m.leaseUntil as number;
        } else {
          m.state = 'dead';
        }
        m.leaseUntil = null;
      }
    }
    const picks = [...this.messages.values()]
      .filter((m) => m.state === 'ready' && m.availableAt <= this.now)
      .sort((a, b) => a.availableAt - b.availableAt || (a.eventId < b.eventId ? -1 : 1))
      .slice(0, limit);
    return picks.map((m) => {
      m.state = 'leased';
      m.attempts++;
      m.generation++;
      m.leaseUntil = this.now + leaseSeconds;
      return { eventId: m.eventId, generation: m.generation };
    });
  }

  /** The messages of `key`, by position. */
  ofKey(key: string): ModelMessage[] {
    return [...this.messages.values()]
      .filter((m) => m.key === key)
      .sort((a, b) => (a.seq as number) - (b.seq as number));
  }

  /** A keyed message finished (done or skipped): its key's next waiting message is ready. */
  release(m: ModelMessage): void {
    if (m.key === null) return;
    const next = this.ofKey(m.key).find((w) => w.state === 'waiting');
    if (next !== undefined) next.state = 'ready';
  }

  /** `'refused'` when some id is unknown or not dead (nothing changes); else the ids skipped. */
  skip(ids: readonly string[]): 'refused' | string[] {
    if (ids.some((id) => this.messages.get(id)?.state !== 'dead')) return 'refused';
    for (const id of ids) {
      const m = this.messages.get(id) as ModelMessage;
      m.state = 'skipped';
      this.release(m);
    }
    return [...ids].sort();
  }

  /** Whether `lease` still holds now: leased, same generation, now < leaseUntil. */
  holds(lease: ModelLease): boolean {
    const m = this.messages.get(lease.eventId);
    return (
      m !== undefined &&
      m.state === 'leased' &&
      m.generation === lease.generation &&
      this.now < (m.leaseUntil as number)
    );
  }

  /** Applies one held lease (the caller checked {@link holds}); returns the outcome. */
  apply(lease: ModelLease, choice: HandlerChoice): 'done' | 'retry' | 'dead' {
    const m = this.messages.get(lease.eventId) as ModelMessage;
    const v = verdict(choice, m.payload);
    if ('effect' in v) {
      m.state = 'done';
      m.leaseUntil = null;
      m.effect = v.effect;
      this.release(m);
      return 'done';
    }
    return this.fail(lease, v.fail, v.code);
  }

  /** Records a failure for one held lease. */
  fail(lease: ModelLease, kind: 'temporary' | 'permanent', code: string): 'retry' | 'dead' {
    const m = this.messages.get(lease.eventId) as ModelMessage;
    m.leaseUntil = null;
    m.lastErrorCode = code;
    if (kind === 'temporary' && m.attempts < MAX_ATTEMPTS) {
      m.state = 'ready';
      m.availableAt = this.now + backoff(m.attempts);
      return 'retry';
    }
    m.state = 'dead';
    m.availableAt = this.now;
    return 'dead';
  }

  /** `'refused'` when some id is unknown or not dead (nothing changes); else the ids. */
  redrive(ids: readonly string[] | 'all'): 'refused' | string[] {
    if (ids !== 'all') {
      if (ids.some((id) => this.messages.get(id)?.state !== 'dead')) return 'refused';
    }
    const chosen = [...this.messages.values()].filter(
      (m) => m.state === 'dead' && (ids === 'all' || ids.includes(m.eventId)),
    );
    for (const m of chosen) {
      m.state = 'ready';
      m.attempts = 0;
      m.availableAt = this.now;
      m.leaseUntil = null;
    }
    return chosen.map((m) => m.eventId).sort();
  }

  totals(): { totals: Record<string, number>; total: number; effects: number } {
    const totals: Record<string, number> = {};
    let total = 0;
    let effects = 0;
    for (const m of this.messages.values()) {
      if (m.effect === null) continue;
      effects++;
      totals[m.effect.category] = (totals[m.effect.category] ?? 0) + m.effect.amountCents;
      total += m.effect.amountCents;
    }
    return { totals, total, effects };
  }
}
