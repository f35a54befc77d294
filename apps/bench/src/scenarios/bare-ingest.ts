/**
 * The bare baseline of `onceq serve`, a child process of the webhooks section: Bun.serve
 * and bun:sqlite (WAL, synchronous FULL) with what any such server needs and nothing
 * more: the request's Standard Webhooks signature checked (HMAC-SHA256, constant time),
 * the body parsed by `JSON.parse`, the event inserted under its id (a repeat ignored),
 * and requests that arrive together written in one transaction, answered 200 after its
 * commit. The ratio of `onceq serve` to it, measured in the same run, is the shape a
 * quiet machine would show.
 *
 * argv[2]: the database path. Prints `{"url": …}` once listening.
 */
import { Database } from 'bun:sqlite';
import { createHmac, timingSafeEqual } from 'node:crypto';

if (import.meta.main) {
  const secret = process.env.BENCH_SECRET ?? '';
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const db = new Database(process.argv[2] as string, { create: true });
  db.run('PRAGMA journal_mode = WAL');
  db.run('PRAGMA synchronous = FULL');
  db.run('CREATE TABLE IF NOT EXISTS events (id TEXT PRIMARY KEY, payload TEXT NOT NULL) STRICT');
  const insert = db.prepare(
    'INSERT INTO events (id, payload) VALUES (?, ?) ON CONFLICT DO NOTHING',
  );
  let waiting: { id: string; body: string; resolve: (r: Response) => void }[] = [];
  let committing = false;
  const commit = () => {
    const group = waiting;
    waiting = [];
    db.transaction(() => {
      for (const w of group) insert.run(w.id, w.body);
    })();
    for (const w of group) {
      w.resolve(
        new Response(`${JSON.stringify({ event_id: w.id })}\n`, {
          headers: { 'content-type': 'application/json' },
        }),
      );
    }
    if (waiting.length > 0) setImmediate(commit);
    else committing = false;
  };
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    reusePort: false,
    development: false,
    async fetch(request) {
      const body = await request.text();
      const id = request.headers.get('webhook-id') ?? '';
      const timestamp = request.headers.get('webhook-timestamp') ?? '';
      const given = Buffer.from(
        (request.headers.get('webhook-signature') ?? '').slice(3),
        'base64',
      );
      const mac = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
      if (given.length !== mac.length || !timingSafeEqual(mac, given)) {
        return new Response('{"error":"no signature matches"}\n', { status: 401 });
      }
      JSON.parse(body);
      return new Promise<Response>((resolve) => {
        waiting.push({ id, body, resolve });
        if (!committing) {
          committing = true;
          setImmediate(commit);
        }
      });
    },
  });
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${server.port}` })}\n`);
  process.on('SIGTERM', () => {
    server.stop();
    db.close();
    process.exit(0);
  });
}
