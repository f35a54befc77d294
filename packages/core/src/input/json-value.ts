/**
 * A JSON value as onceq's strict parser returns it. Unlike `JSON.parse`, the kind of
 * every number survives: an integer lexeme becomes a `number` (or a `bigint` beyond
 * 2^53, kept exactly) and a float lexeme (`1.0`, `1e2`) becomes a {@link JsonFloat}.
 * So `10000` and `10000.0` stay different values, as docs/protocol.md §2 requires.
 */
export type JsonValue =
  | null
  | boolean
  | string
  | number
  | bigint
  | JsonFloat
  | JsonValue[]
  | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

/** A number written with a fraction or an exponent. `value` is the double it denotes. */
export class JsonFloat {
  readonly value: number;
  constructor(value: number) {
    this.value = value;
  }
  toString(): string {
    return canonicalFloat(this.value);
  }
}

/** Canonical text of a float: shortest round-trip digits, always marked as a float (`10000.0`, `1e+300`). */
export function canonicalFloat(value: number): string {
  const text = String(value);
  return /[.eE]/.test(text) || text.includes('Infinity') || text === 'NaN' ? text : `${text}.0`;
}

export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof JsonFloat)
  );
}
