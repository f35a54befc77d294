/**
 * Event ids of real streams, as the bench generates them: random UUIDv4 and
 * time-ordered UUIDv7 (RFC 9562: 48 bits of Unix milliseconds, then a counter within
 * the millisecond, then random bits).
 */

/** The two kinds of 36-character ids the growth and soak figures compare. */
export const ID_KINDS = ['uuid4', 'uuid7'] as const;
export type IdKind = (typeof ID_KINDS)[number];

function randomHex(chars: number): string {
  let out = '';
  while (out.length < chars) out += Math.floor(Math.random() * 0x1_0000_0000).toString(16);
  return out.slice(0, chars);
}

const VARIANT = ['8', '9', 'a', 'b'] as const;

function uuid7Text(ms: number, counter: number): string {
  const t = ms.toString(16).padStart(12, '0');
  const c = counter.toString(16).padStart(3, '0');
  const r = randomHex(15);
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${c}-${VARIANT[counter & 3]}${r.slice(0, 3)}-${r.slice(3, 15)}`;
}

/**
 * The `i`-th of `total` UUIDv4 ids in increasing order, spread evenly over the id space
 * (its first 32 bits grow with `i`, the rest are random): a bulk load writes each
 * B-tree at its right edge, and later random ids land all over it, as in a real store.
 */
export function sortedUuid4(i: number, total: number): string {
  const high = Math.floor((i * 0x1_0000_0000) / total)
    .toString(16)
    .padStart(8, '0');
  const r = randomHex(23);
  return `${high}-${r.slice(0, 4)}-4${r.slice(4, 7)}-${VARIANT[i & 3]}${r.slice(7, 10)}-${r.slice(10, 22)}`;
}

/** The `i`-th of a run of UUIDv7 ids starting at `startMs`: 1000 a millisecond, increasing. */
export function uuid7At(startMs: number, i: number): string {
  return uuid7Text(startMs + Math.floor(i / 1000), i % 1000);
}

/**
 * New ids of one kind, as a live source makes them: UUIDv4 at random, UUIDv7 from the
 * clock (a counter within the millisecond keeps them increasing).
 */
export function idSource(kind: IdKind): () => string {
  if (kind === 'uuid4') return () => crypto.randomUUID();
  let lastMs = 0;
  let counter = 0;
  return () => {
    const now = Date.now();
    if (now > lastMs) {
      lastMs = now;
      counter = 0;
    } else if (++counter > 0xfff) {
      lastMs += 1;
      counter = 0;
    }
    return uuid7Text(lastMs, counter);
  };
}

/** How the reports name a kind of id. */
export function idLabel(kind: IdKind): string {
  return kind === 'uuid4' ? 'UUIDv4' : 'UUIDv7';
}
