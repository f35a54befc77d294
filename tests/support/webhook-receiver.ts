/**
 * A webhook receiver as a real process, for the delivery tests: it verifies every request
 * with the tests' own implementation of Standard Webhooks (./standard-webhooks.ts:
 * WebCrypto, written from the specification's text, importing nothing of onceq), dedups
 * on `webhook-id`, and misbehaves at random (seeded): 500s, answers that
 * come after the sender's timeout, slow answers, and connections reset before or after
 * it processed the request.
 *
 * Its one argument is JSON: `port` (0 picks one), `secret` (`whsec_…`), `seed`, `faults`
 * (0 to 1, the share of requests that misbehave), `hangMs` (how long a late answer
 * waits), `dir` (where `processed.jsonl` and `requests.jsonl` are appended;
 * `processed.jsonl` is read back at start, so the dedup survives a restart).
 * Prints `{"port": N}` once listening.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { hmacKey, signedBy } from './standard-webhooks.ts';

export interface ReceiverOptions {
  port: number;
  secret: string;
  seed: number;
  faults: number;
  hangMs: number;
  dir: string;
}

const {
  port: wantedPort,
  secret,
  faults,
  hangMs,
  dir,
  ...rest
} = JSON.parse(process.argv[2] as string) as ReceiverOptions;
let seed = rest.seed >>> 0;

/** mulberry32: a small seeded generator, so a failing run can be repeated. */
function random(): number {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

const processedPath = join(dir, 'processed.jsonl');
const requestsPath = join(dir, 'requests.jsonl');
const seen = new Set<string>();
if (existsSync(processedPath)) {
  for (const line of readFileSync(processedPath, 'utf8').split('\n')) {
    if (line !== '') seen.add((JSON.parse(line) as { id: string }).id);
  }
}

const key = await hmacKey(secret);

async function verified(id: string, timestamp: string, signature: string, body: Buffer) {
  if (Math.abs(Math.floor(Date.now() / 1000) - Number(timestamp)) > 300) return false;
  return signedBy(key, id, timestamp, signature, body);
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', async () => {
    const body = Buffer.concat(chunks);
    const id = String(req.headers['webhook-id'] ?? '');
    const timestamp = String(req.headers['webhook-timestamp'] ?? '');
    const signature = String(req.headers['webhook-signature'] ?? '');
    const dice = random();
    const fault =
      dice < faults * 0.2
        ? 'error500'
        : dice < faults * 0.4
          ? 'reset-before'
          : dice < faults * 0.6
            ? 'reset-after'
            : dice < faults * 0.8
              ? 'late'
              : dice < faults
                ? 'slow'
                : 'none';
    const ok = await verified(id, timestamp, signature, body);
    appendFileSync(requestsPath, `${JSON.stringify({ id, ok, fault })}\n`);
    if (!ok) {
      res.writeHead(401).end('bad signature');
      return;
    }
    if (fault === 'error500') {
      res.writeHead(500).end('try again');
      return;
    }
    if (fault === 'reset-before') {
      req.socket.destroy();
      return;
    }
    if (!seen.has(id)) {
      seen.add(id);
      appendFileSync(processedPath, `${JSON.stringify({ id, body: body.toString('utf8') })}\n`);
    }
    if (fault === 'reset-after') {
      req.socket.destroy();
      return;
    }
    if (fault === 'late') await Bun.sleep(hangMs);
    if (fault === 'slow') await Bun.sleep(20 + Math.floor(random() * 80));
    res.writeHead(200).end('ok');
  });
});
server.listen(wantedPort, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ port })}\n`);
});
