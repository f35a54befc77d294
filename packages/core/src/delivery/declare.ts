/**
 * A completion's `deliver` list turned into rows of onceq's own `deliveries` table, which
 * the completion's `insert` rows write in the ACK's transaction: a delivery exists if
 * and only if its message is done, whichever way the result is recorded.
 */
import { checkRows, jsonText, type RowGroup } from '../handler/completion-rows.ts';
import { ENDPOINT_NAME } from './endpoint.ts';

/** One webhook a completion declares. */
export interface Delivery {
  /** The name of an endpoint configured by the operator (`onceq.config.json`'s `endpoints`). */
  readonly to: string;
  /**
   * The request body: a string is sent as it is; a plain object or array is sent as its
   * JSON text. Stored once, sent byte for byte on every attempt.
   */
  readonly body: unknown;
  /**
   * Names this delivery within its message (1 to 64 letters, digits, `_`, `.` or `-`);
   * with the event id it makes the `webhook-id`. Default: its 1-based position in the list.
   */
  readonly key?: string;
}

/** At most this many deliveries per message. */
export const MAX_DELIVERIES = 100;

/** The longest delivery body, in bytes of UTF-8. */
export const MAX_DELIVERY_BODY_BYTES = 1_000_000;

const KEY = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * The `deliveries` rows of `deliver` (a completion's field, read once) for the message
 * `eventId`, or one sentence naming the delivery at fault.
 */
export function deliveryRows(
  deliver: unknown,
  eventId: string,
): { groups: RowGroup[] } | { violation: string } {
  if (!Array.isArray(deliver)) {
    return { violation: "the completion's deliver must be an array of { to, body, key? }" };
  }
  const list = [...deliver];
  if (list.length > MAX_DELIVERIES) {
    return {
      violation: `the completion's deliver holds ${list.length} deliveries, at most ${MAX_DELIVERIES}`,
    };
  }
  const keys = new Set<string>();
  const rows: Record<string, string>[] = [];
  for (let i = 0; i < list.length; i++) {
    const where = `the completion's deliver[${i}]`;
    const item = list[i];
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      return { violation: `${where} must be an object { to, body, key? }` };
    }
    const { to, body, key: given, ...rest } = item as Record<string, unknown>;
    const extra = Object.keys(rest)[0];
    if (extra !== undefined) {
      return {
        violation: `${where} has an unknown field ${JSON.stringify(extra)} (known: to, body, key)`,
      };
    }
    if (typeof to !== 'string' || !ENDPOINT_NAME.test(to)) {
      return {
        violation: `${where}.to must name a configured endpoint (1 to 64 letters, digits, _ or -)`,
      };
    }
    const key = given === undefined ? String(i + 1) : given;
    if (typeof key !== 'string' || !KEY.test(key)) {
      return { violation: `${where}.key must be 1 to 64 letters, digits, _, . or -` };
    }
    if (keys.has(key)) return { violation: `${where}.key ${key} is used twice in one message` };
    keys.add(key);
    const text = typeof body === 'string' ? body : body === undefined ? undefined : jsonText(body);
    if (text === undefined) {
      return { violation: `${where}.body must be a string or a plain JSON object or array` };
    }
    if (Buffer.byteLength(text) > MAX_DELIVERY_BODY_BYTES) {
      return { violation: `${where}.body is over ${MAX_DELIVERY_BODY_BYTES} bytes` };
    }
    rows.push({ event_id: eventId, key, endpoint: to, body: text });
  }
  if (rows.length === 0) return { groups: [] };
  // onceq's own table, in the store's schema whatever the connection's search_path.
  return checkRows({ deliveries: rows }, true);
}
