import { describe, expect, test } from 'bun:test';
import {
  type HandlerContext,
  JsonFloat,
  type JsonObject,
  PermanentFailure,
  TemporaryFailure,
} from '@onceq/core';
import {
  canonicalize,
  effectResult,
  HandlerFailure,
  type JsonValue,
  parseJson,
  recordRows,
  resultOf,
  runHandler,
} from '@onceq/core/internal';
import { failingOnce } from '@onceq/demo/failing-once.ts';
import {
  DEFAULT_HANDLER,
  type EffectHandler,
  HANDLER_VERSIONS,
  type HandlerVersion,
  handlers,
  isHandlerVersion,
  LATEST_HANDLER,
  v1,
  v2,
} from '@onceq/handler';

const ctx: HandlerContext = {
  eventId: 'E0001',
  attempt: 1,
  generation: 0,
  signal: new AbortController().signal,
  store: { kind: 'sqlite', schema: 'main' },
};

/** Run `handler` and return the failure it throws (fails the test if it throws nothing). */
function rejection(handler: EffectHandler, payload: JsonObject): PermanentFailure {
  let thrown: unknown;
  try {
    handler(payload, ctx);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(PermanentFailure);
  const failure = thrown as PermanentFailure;
  expect(failure.kind).toBe('permanent');
  expect(failure.code).toBe('invalid_payload');
  return failure;
}

const pay = (category: JsonValue, amount: JsonValue = 100): JsonObject => ({
  category,
  amount_cents: amount,
});

describe('categories', () => {
  for (const category of ['book', 'pen', 'bag']) {
    test(`${category} is accepted by v1 and v2`, () => {
      expect(v1(pay(category, 250), ctx)).toEqual({ category, amountCents: 250 });
      expect(v2(pay(category, 250), ctx)).toEqual({ category, amountCents: 250 });
    });
  }

  test('toy is rejected by v1 with a readable detail', () => {
    const failure = rejection(v1, pay('toy'));
    expect(failure.message).toBe('category "toy" is not known to handler v1 (book, pen, bag)');
  });

  test('toy is accepted by v2', () => {
    expect(v2(pay('toy', 1234), ctx)).toEqual({ category: 'toy', amountCents: 1234 });
  });

  test('an unknown category is rejected by v2 too', () => {
    expect(rejection(v2, pay('car')).message).toBe(
      'category "car" is not known to handler v2 (book, pen, bag, toy)',
    );
  });

  test('category is case sensitive', () => {
    rejection(v1, pay('Book'));
  });

  const notStrings: [string, JsonValue, string][] = [
    ['an array', ['book'], 'an array'],
    ['an object', { name: 'book' }, 'an object'],
    ['a number', 7, '7'],
    ['null', null, 'null'],
    ['a bool', true, 'true'],
    ['a float', new JsonFloat(1.5), '1.5'],
  ];
  for (const [what, value, shown] of notStrings) {
    test(`category as ${what} is invalid_payload, not a TypeError`, () => {
      for (const handler of [v1, v2]) {
        expect(rejection(handler, pay(value)).message).toBe(
          `category must be a string, got ${shown}`,
        );
      }
    });
  }

  test('missing category is invalid_payload', () => {
    expect(rejection(v1, { amount_cents: 100 }).message).toBe(
      'category is missing (handler v1 knows book, pen, bag)',
    );
  });

  test('an inherited category does not count', () => {
    const payload = Object.create({ category: 'book' }) as JsonObject;
    payload.amount_cents = 100;
    rejection(v1, payload);
  });
});

describe('amount_cents', () => {
  test('1 and 9,999,999 are accepted', () => {
    expect(v1(pay('pen', 1), ctx)).toEqual({ category: 'pen', amountCents: 1 });
    expect(v2(pay('pen', 9_999_999), ctx)).toEqual({ category: 'pen', amountCents: 9_999_999 });
  });

  const bad: [string, JsonValue, string][] = [
    ['0', 0, '0'],
    ['10,000,000', 10_000_000, '10000000'],
    ['negative', -5, '-5'],
    ['a bool', true, 'true'],
    ['false', false, 'false'],
    ['a string', '100', '"100"'],
    ['null', null, 'null'],
    ['an array', [100], 'an array'],
    ['an object', { value: 100 }, 'an object'],
    ['the float 100.0', new JsonFloat(100), '100.0'],
    ['the float 1e2', new JsonFloat(1e2), '100.0'],
    ['the float 12.5', new JsonFloat(12.5), '12.5'],
    ['a huge bigint', 123456789012345678901234567890n, '123456789012345678901234567890'],
    ['a bigint just above 2^53', 9007199254740993n, '9007199254740993'],
  ];
  for (const [what, value, shown] of bad) {
    test(`${what} is invalid_payload`, () => {
      for (const handler of [v1, v2]) {
        expect(rejection(handler, pay('book', value)).message).toBe(
          `amount_cents must be an integer from 1 to 9999999, got ${shown}`,
        );
      }
    });
  }

  test('a small bigint is still not accepted as-is (the parser never makes one)', () => {
    rejection(v1, pay('book', 5n));
  });

  test('missing amount_cents is invalid_payload', () => {
    expect(rejection(v1, { category: 'bag' }).message).toBe(
      'amount_cents is missing (must be an integer from 1 to 9999999)',
    );
  });
});

describe('other fields', () => {
  test('extra fields are ignored and not copied into the effect', () => {
    const payload: JsonObject = {
      category: 'bag',
      amount_cents: 42,
      note: 'gift',
      nested: { deep: [1, new JsonFloat(2.5)] },
      extra_amount: new JsonFloat(1),
    };
    expect(v1(payload, ctx)).toEqual({ category: 'bag', amountCents: 42 });
    expect(v2(payload, ctx)).toEqual({ category: 'bag', amountCents: 42 });
  });

  test('a null-prototype payload works', () => {
    const payload = Object.assign(Object.create(null) as JsonObject, pay('pen', 3));
    expect(v1(payload, ctx)).toEqual({ category: 'pen', amountCents: 3 });
  });

  test('category problems are reported before amount problems', () => {
    expect(rejection(v1, pay('toy', true)).message).toContain('category "toy"');
  });
});

describe('registry', () => {
  test('versions and defaults', () => {
    expect(HANDLER_VERSIONS).toEqual(['v1', 'v2']);
    expect(LATEST_HANDLER).toBe('v2');
    expect(DEFAULT_HANDLER).toBe('v1');
    expect(handlers.v1).toBe(v1);
    expect(handlers.v2).toBe(v2);
    expect(isHandlerVersion('v1')).toBe(true);
    expect(isHandlerVersion('v3')).toBe(false);
    expect(isHandlerVersion('toString')).toBe(false);
  });

  test('the one dry-run rule (runHandler, as previewRedrive and the worker use it) reports the effect, or the code and detail', async () => {
    const dryRun = (version: HandlerVersion, payload: JsonObject) =>
      runHandler(handlers[version], canonicalize(payload), {
        ...ctx,
        signal: new AbortController().signal,
      });
    expect(await dryRun('v1', pay('book', 5))).toEqual(
      effectResult({ category: 'book', amountCents: 5 }),
    );
    expect(await dryRun('v1', pay('toy', 5))).toEqual({
      failure: {
        kind: 'permanent',
        code: 'invalid_payload',
        detail: 'category "toy" is not known to handler v1 (book, pen, bag)',
      },
    });
    expect(await dryRun('v2', pay('toy', 5))).toEqual(
      effectResult({ category: 'toy', amountCents: 5 }),
    );
    expect(await dryRun('v2', pay('toy', new JsonFloat(5)))).toMatchObject({
      failure: { kind: 'permanent', code: 'invalid_payload' },
    });
  });

  test('a failure is recognised by its brand, not its class: a copy of the SDK, or none, keeps its kind and code', async () => {
    const context = { ...ctx, signal: new AbortController().signal };
    // What a module with its own copy of the SDK throws: another class, the same brand.
    const brand: unique symbol = Symbol.for('onceq.failure') as never;
    class ForeignPermanent extends Error {
      readonly [brand] = 'permanent';
      readonly code = 'bad_tip';
    }
    const fromCopy = await runHandler(
      () => {
        throw new ForeignPermanent('tip is negative');
      },
      '{}',
      context,
    );
    expect(fromCopy).toEqual({
      failure: { kind: 'permanent', code: 'bad_tip', detail: 'tip is negative' },
    });
    // A plain object with the brand and no SDK at all.
    const plain = await runHandler(
      () => {
        throw { [Symbol.for('onceq.failure')]: 'temporary', code: 'ledger_down' };
      },
      '{}',
      context,
    );
    expect(plain).toEqual({ failure: { kind: 'temporary', code: 'ledger_down', detail: '' } });
    // Without the brand, a look-alike is an ordinary error: a temporary handler_error.
    const unbranded = await runHandler(
      () => {
        throw Object.assign(new Error('nope'), { kind: 'permanent', code: 'bad_tip' });
      },
      '{}',
      context,
    );
    expect(unbranded).toMatchObject({ failure: { kind: 'temporary', code: 'handler_error' } });
  });

  test('the error kinds: a temporary and a permanent HandlerFailure', () => {
    const temp = new TemporaryFailure('dependency_down', 'x');
    expect(temp).toBeInstanceOf(HandlerFailure);
    expect(temp.kind).toBe('temporary');
    expect(new PermanentFailure('invalid_payload', 'x').kind).toBe('permanent');
  });
});

describe('failingOnce', () => {
  const wrapped = failingOnce(v1, new Set(['E0002']));

  test('fails a listed event with a TemporaryFailure on attempt 1 only', () => {
    let thrown: unknown;
    try {
      wrapped(pay('book', 10), { eventId: 'E0002', attempt: 1, generation: 0 });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(TemporaryFailure);
    expect((thrown as TemporaryFailure).kind).toBe('temporary');
    expect((thrown as TemporaryFailure).code).toBe('dependency_down');
    expect(wrapped(pay('book', 10), { eventId: 'E0002', attempt: 2, generation: 0 })).toEqual({
      category: 'book',
      amountCents: 10,
    });
  });

  test('delegates for other events, including rejections', () => {
    expect(wrapped(pay('pen', 7), { eventId: 'E0001', attempt: 1, generation: 0 })).toEqual({
      category: 'pen',
      amountCents: 7,
    });
    rejection(wrapped, pay('toy'));
  });

  test('accepts a custom code', () => {
    const custom = failingOnce(v2, new Set(['E1']), 'rate_limited');
    expect(() => custom(pay('toy'), { eventId: 'E1', attempt: 1, generation: 3 })).toThrow(
      TemporaryFailure,
    );
    try {
      custom(pay('toy'), { eventId: 'E1', attempt: 1, generation: 3 });
    } catch (error) {
      expect((error as TemporaryFailure).code).toBe('rate_limited');
    }
  });
});

// Payloads from the real strict parser: the lexemes a user would write.
describe('payloads from the real parser', () => {
  const parse = (text: string) => parseJson(text) as JsonObject;

  test('an integer lexeme is accepted', () => {
    expect(v1(parse('{"category":"book","amount_cents":100,"x":[1.5]}'), ctx)).toEqual({
      category: 'book',
      amountCents: 100,
    });
  });

  for (const lexeme of ['100.0', '1e2', '1E2', '100e0']) {
    test(`the float lexeme ${lexeme} is rejected`, () => {
      rejection(v1, parse(`{"category":"book","amount_cents":${lexeme}}`));
    });
  }

  test('a huge integer is rejected', () => {
    rejection(v2, parse('{"category":"toy","amount_cents":123456789012345678901234567890}'));
  });

  test('toy: v1 rejects, v2 accepts', () => {
    const payload = parse('{"category":"toy","amount_cents":9999999}');
    rejection(v1, payload);
    expect(v2(payload, ctx)).toEqual({ category: 'toy', amountCents: 9999999 });
  });
});

describe("a completion's insert", () => {
  const refused = (insert: unknown) => resultOf({ insert, summary: 'x' });
  const sentence = (detail: string) => ({
    failure: { kind: 'permanent' as const, code: 'invalid_completion', detail },
  });

  test('rows are grouped by table and sorted column list, values copied and bound', () => {
    const result = resultOf({
      insert: {
        'shop.ledger_entries': [
          { event_id: 'E1', amount_cents: -1299, currency: 'EUR' },
          { currency: 'USD', amount_cents: 10n ** 15n, event_id: 'E2' },
        ],
        audit: { event_id: 'E1', ok: true, note: null, data: { tags: ['a', 1.5] } },
      },
    });
    expect(result).toEqual({
      completion: {
        rows: [
          {
            table: '"shop"."ledger_entries"',
            columns: ['"amount_cents"', '"currency"', '"event_id"'],
            rows: [
              [-1299, 'EUR', 'E1'],
              [10n ** 15n, 'USD', 'E2'],
            ],
            json: [null, null],
            key: '"shop"."ledger_entries" "amount_cents","currency","event_id"',
            own: false,
            owner: null,
            stamp: null,
          },
          {
            table: '"audit"',
            columns: ['"data"', '"event_id"', '"note"', '"ok"'],
            rows: [['{"tags":["a",1.5]}', 'E1', null, true]],
            json: [[true, false, false, false]],
            key: '"audit" "data","event_id","note","ok"',
            own: false,
            owner: null,
            stamp: null,
          },
          recordRows(null),
        ],
        write: null,
        summary: null,
        effect: null,
      },
    });
  });

  test('a bad shape is a permanent invalid_completion naming the table and column', () => {
    expect(refused([{ a: 1 }])).toEqual(
      sentence("the completion's insert must be an object of table names, not an array"),
    );
    expect(refused({ 'a.b.c': { x: 1 } })).toEqual(
      sentence(
        `the completion's insert names table "a.b.c": a table name is letters, digits and _ (not starting with a digit), with at most one schema dot`,
      ),
    );
    expect(JSON.stringify(refused({ 'ledger; DROP TABLE x': { x: 1 } }))).toContain(
      'names table \\"ledger; DROP TABLE x\\"',
    );
    expect(refused({ ledger: [{ x: 1 }, 'row'] })).toEqual(
      sentence(
        "the completion's insert row 2 of table ledger must be an object of column values, not string",
      ),
    );
    expect(refused({ ledger: {} })).toEqual(
      sentence("the completion's insert row of table ledger has no columns"),
    );
    expect(refused({ ledger: { '1st': 1 } })).toEqual(
      sentence(
        `the completion's insert row of table ledger names column "1st": a column name is letters, digits and _ (not starting with a digit)`,
      ),
    );
    for (const [value, what] of [
      [undefined, 'undefined'],
      [Number.NaN, 'NaN'],
      [new Date(0), 'a Date'],
      [new JsonFloat(1.5), 'a JsonFloat'],
      [{ at: new Date(0) }, 'an object'],
      [[1, Number.POSITIVE_INFINITY], 'an array'],
    ] as const) {
      expect(refused({ ledger: { amount: value } })).toEqual(
        sentence(
          `the completion's insert row of table ledger has column amount = ${what}: a value is a string, a finite number, a bigint, a boolean, null, or a plain array or object`,
        ),
      );
    }
  });

  test('a column list once found valid lets through only the very same names', () => {
    expect(resultOf({ insert: { ledger: { a: 1, b: 2 } } })).toMatchObject({
      completion: { rows: [{ columns: ['"a"', '"b"'] }, recordRows(null)] },
    });
    expect(resultOf({ insert: { ledger: { 'a,b': 1 } } })).toEqual(
      sentence(
        `the completion's insert row of table ledger names column "a,b": a column name is letters, digits and _ (not starting with a digit)`,
      ),
    );
  });

  test('the insert is read once: a getter that changes later cannot change what is stored', () => {
    let reads = 0;
    const row = {
      get amount() {
        reads++;
        return reads === 1 ? 5 : 'changed';
      },
    };
    const result = resultOf({ insert: { ledger: row } });
    expect(reads).toBe(1);
    expect(result).toEqual({
      completion: {
        rows: [
          {
            table: '"ledger"',
            columns: ['"amount"'],
            rows: [[5]],
            json: [null],
            key: '"ledger" "amount"',
            own: false,
            owner: null,
            stamp: null,
          },
          recordRows(null),
        ],
        write: null,
        summary: null,
        effect: null,
      },
    });
  });
});
