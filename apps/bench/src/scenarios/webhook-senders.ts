/**
 * A child process of the webhooks section: `senders` concurrent senders, each on its own
 * keep-alive HTTP/1.1 connection, POST their share of signed webhooks one at a time and
 * time each from the request's first byte to the answer's last. The requests are built
 * and signed before `ready`, and the client is a few lines over a socket rather than
 * `fetch`, so the section measures the server, not its client.
 *
 * argv[2]: JSON {@link SenderSpec}. Prints `ready`, waits for a line on stdin, then prints
 * one JSON line: {@link SenderResult}.
 */
import { signatureHeader } from '@onceq/core/webhooks';

export interface SenderSpec {
  readonly port: number;
  readonly path: string;
  /** The first request's number; this child sends `count` from it. */
  readonly from: number;
  readonly count: number;
  readonly senders: number;
  readonly secret: string;
}

export interface SenderResult {
  readonly latencies: number[];
  /** Requests not answered 200 (status or connection failure). */
  readonly failed: number;
  readonly error?: string;
}

/** The body of request `i`: a paid book, a different amount each time. */
export function webhookBody(i: number): string {
  return `{"category":"book","amount_cents":${100 + (i % 900)},"n":${i}}`;
}

function request(spec: SenderSpec, i: number, key: Uint8Array, timestamp: number): Uint8Array {
  const id = `bench_${i}`;
  const body = webhookBody(i);
  const head = [
    `POST ${spec.path} HTTP/1.1`,
    `host: 127.0.0.1:${spec.port}`,
    'content-type: application/json',
    `content-length: ${Buffer.byteLength(body)}`,
    `webhook-id: ${id}`,
    `webhook-timestamp: ${timestamp}`,
    `webhook-signature: ${signatureHeader([key], id, timestamp, body)}`,
  ].join('\r\n');
  return Buffer.from(`${head}\r\n\r\n${body}`);
}

/** One connection: sends `requests` one after another, resolving with their latencies. */
function sender(port: number, requests: readonly Uint8Array[]): Promise<SenderResult> {
  return new Promise((resolve, reject) => {
    const latencies: number[] = [];
    let failed = 0;
    let next = 0;
    let started = 0;
    let buffer = Buffer.alloc(0);
    const send = (socket: { write(data: Uint8Array): number; end(): void }) => {
      const r = requests[next];
      if (r === undefined) {
        socket.end();
        resolve({ latencies, failed });
        return;
      }
      next += 1;
      started = performance.now();
      socket.write(r);
    };
    Bun.connect({
      hostname: '127.0.0.1',
      port,
      socket: {
        open: send,
        data(socket, chunk) {
          buffer = buffer.length === 0 ? Buffer.from(chunk) : Buffer.concat([buffer, chunk]);
          for (;;) {
            const end = buffer.indexOf('\r\n\r\n');
            if (end < 0) return;
            const head = buffer.subarray(0, end).toString('latin1');
            const length = Number(/\r\ncontent-length: *([0-9]+)/i.exec(head)?.[1] ?? '0');
            if (buffer.length < end + 4 + length) return;
            buffer = buffer.subarray(end + 4 + length);
            latencies.push(performance.now() - started);
            if (!head.startsWith('HTTP/1.1 200')) failed += 1;
            send(socket);
          }
        },
        error: (_socket, error) => reject(error),
        close() {
          if (next < requests.length || latencies.length < requests.length) {
            reject(new Error(`the server closed the connection after ${latencies.length} answers`));
          }
        },
      },
    }).catch(reject);
  });
}

if (import.meta.main) {
  const spec = JSON.parse(process.argv[2] as string) as SenderSpec;
  const key = new Uint8Array(Buffer.from(spec.secret.slice('whsec_'.length), 'base64'));
  const timestamp = Math.floor(Date.now() / 1000);
  const shares = Array.from({ length: spec.senders }, () => [] as Uint8Array[]);
  for (let j = 0; j < spec.count; j++) {
    (shares[j % spec.senders] as Uint8Array[]).push(request(spec, spec.from + j, key, timestamp));
  }
  process.stdout.write('ready\n');
  for await (const _ of console) break;
  try {
    const results = await Promise.all(shares.map((share) => sender(spec.port, share)));
    const out: SenderResult = {
      latencies: results.flatMap((r) => r.latencies),
      failed: results.reduce((n, r) => n + r.failed, 0),
    };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } catch (error) {
    process.stdout.write(
      `${JSON.stringify({ latencies: [], failed: spec.count, error: String(error) })}\n`,
    );
  }
}
