/**
 * TLS to PostgreSQL with real certificates. A throwaway CA (openssl) signs a server
 * certificate for 127.0.0.1 and localhost; a cluster of this file's own runs with
 * `ssl = on` (scripts/pg-cluster.sh with ONCEQ_PG_SSL_CERT and ONCEQ_PG_SSL_KEY), and
 * real `onceq` processes enqueue, work and report through `sslmode=verify-full` and
 * `sslmode=require` to the exact totals, with nothing but onceq's own output on stderr
 * (no driver warning). The refusals: another CA's certificate under verify-full (and
 * under require with sslrootcert), and `require` against a server without TLS (the
 * suite's DATABASE_URL cluster), each one sentence, exit 1, nothing written.
 *
 * Runs under {@link describePostgres}'s rule; where PostgreSQL is required, missing
 * openssl or server binaries fail it instead of skipping it.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describePostgres, postgresRequired } from '../support/backends.ts';
import { cliSandbox } from '../support/cli.ts';
import { nEvents } from '../support/factories.ts';
import { scratchDatabase } from '../support/pg-database.ts';
import { runProcess } from '../support/spawn.ts';

const CLUSTER_SCRIPT = resolve(import.meta.dir, '../../scripts/pg-cluster.sh');
/** initdb + start on a loaded machine can take well over bun's hook default. */
const CLUSTER_TIMEOUT_MS = 180_000;

/** What this file needs besides a server: openssl and the server binaries. */
function missingTools(): string | null {
  const has = (script: string) =>
    Bun.spawnSync(['bash', '-c', script], { stdout: 'ignore', stderr: 'ignore' }).exitCode === 0;
  if (!has('command -v openssl')) return 'no openssl (apt-get install openssl)';
  if (!has('command -v initdb || ls /usr/lib/postgresql/*/bin/initdb')) {
    return 'no PostgreSQL server binaries';
  }
  return null;
}

const dir = mkdtempSync(join(tmpdir(), 'onceq-tls-'));
const file = (name: string) => join(dir, name);
const stateFile = file('pg.state');

async function openssl(...args: string[]): Promise<void> {
  const result = await runProcess(['openssl', ...args], { cwd: dir });
  if (result.code !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr}`);
}

/** A CA, a server certificate it signs for 127.0.0.1 and localhost, and another CA. */
async function makeCertificates(): Promise<void> {
  const days = ['-days', '2'];
  await openssl(
    ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt'],
    ...[...days, '-subj', '/CN=onceq test CA'],
  );
  await openssl(
    ...['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr'],
    ...['-subj', '/CN=localhost'],
  );
  writeFileSync(file('server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  await openssl(
    ...['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key'],
    ...['-CAcreateserial', '-out', 'server.crt', '-extfile', 'server.ext', ...days],
  );
  await openssl(
    ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'other.key'],
    ...['-out', 'other.crt', ...days, '-subj', '/CN=another CA'],
  );
}

function clusterCommand(command: 'start' | 'stop') {
  const firstPort = Number(process.env.ONCEQ_PG_FIRST_PORT ?? 54330) + 40;
  return runProcess(['bash', CLUSTER_SCRIPT, command], {
    env: {
      ...process.env,
      ONCEQ_PG_STATE: stateFile,
      ONCEQ_PG_FIRST_PORT: String(firstPort),
      ONCEQ_PG_SSL_CERT: file('server.crt'),
      ONCEQ_PG_SSL_KEY: file('server.key'),
    },
  });
}

/** `url` with `params` added to its query. */
function withParams(url: string, params: Record<string, string>): string {
  const out = new URL(url);
  for (const [name, value] of Object.entries(params)) out.searchParams.set(name, value);
  return out.toString();
}

describePostgres('PostgreSQL over TLS with certificates', () => {
  const missing = missingTools();
  if (missing !== null && !postgresRequired()) {
    console.warn(`postgres-tls.test.ts: skipped: ${missing}`);
    test.skip(`TLS (skipped: ${missing})`, () => {});
    return;
  }

  /** The TLS cluster's URL (no TLS parameters yet). */
  let tlsUrl = '';
  beforeAll(async () => {
    if (missing !== null) throw new Error(`postgres-tls.test.ts: ${missing}`);
    await makeCertificates();
    const started = await clusterCommand('start');
    if (started.code !== 0) throw new Error(`could not start the TLS cluster:\n${started.stderr}`);
    tlsUrl = started.stdout.trim();
  }, CLUSTER_TIMEOUT_MS);
  afterAll(async () => {
    await clusterCommand('stop');
    rmSync(dir, { recursive: true, force: true });
  }, CLUSTER_TIMEOUT_MS);

  const verifyFull = (host = '127.0.0.1', ca = file('ca.crt')) => {
    const url = new URL(tlsUrl);
    url.hostname = host;
    return withParams(url.toString(), { sslmode: 'verify-full', sslrootcert: ca });
  };

  /** `status --json` through a verified connection: the store's counts. */
  async function counts(sandbox: ReturnType<typeof cliSandbox>) {
    const report = await sandbox.run(['status', '--json', '--db', verifyFull()]);
    expect(report.stderr).toBe('');
    expect(report.code).toBe(0);
    const parsed = JSON.parse(report.stdout) as { messages: { done: number }; effects: number };
    return { done: parsed.messages.done, effects: parsed.effects };
  }

  test('enqueue, work and status with sslmode=verify-full and the CA: exact totals, no driver warning', async () => {
    const sandbox = cliSandbox();
    try {
      const events = nEvents(30);
      writeFileSync(join(sandbox.cwd, 'events.jsonl'), events.jsonl);
      // The certificate names both: the host name (localhost) and the address (127.0.0.1).
      const enqueued = await sandbox.run([
        ...['enqueue', 'events.jsonl', '--db', verifyFull('localhost')],
      ]);
      expect(enqueued.stderr).toBe('');
      expect(enqueued.code).toBe(0);
      const worked = await sandbox.run(['work', '--db', verifyFull()]);
      // onceq's own line and nothing else (no driver warning).
      expect(worked.stderr).toBe('handler v1 (from the default)\n');
      expect(worked.code).toBe(0);
      expect(worked.stdout).toContain('30 done');
      expect(await counts(sandbox)).toEqual({ done: 30, effects: 30 });
    } finally {
      sandbox.cleanup();
    }
  }, 120_000);

  test('enqueue and work with sslmode=require (encrypted, certificate not checked): exact totals, no driver warning', async () => {
    const sandbox = cliSandbox();
    try {
      // E0001…E0030 are stored by the test above; ten more are new.
      writeFileSync(join(sandbox.cwd, 'events.jsonl'), nEvents(40).jsonl);
      const require = withParams(tlsUrl, { sslmode: 'require' });
      const enqueued = await sandbox.run(['enqueue', 'events.jsonl', '--db', require]);
      expect(enqueued.stderr).toBe('');
      expect(enqueued.code).toBe(0);
      const worked = await sandbox.run(['work', '--db', require]);
      // onceq's own line and nothing else (no driver warning).
      expect(worked.stderr).toBe('handler v1 (from the default)\n');
      expect(worked.code).toBe(0);
      expect(worked.stdout).toContain('10 done');
      expect(await counts(sandbox)).toEqual({ done: 40, effects: 40 });
    } finally {
      sandbox.cleanup();
    }
  }, 120_000);

  test("another CA's certificate is refused under verify-full and under require with sslrootcert: one sentence, exit 1, nothing written", async () => {
    const sandbox = cliSandbox();
    try {
      writeFileSync(join(sandbox.cwd, 'more.jsonl'), nEvents(50).jsonl);
      const before = await counts(sandbox);
      for (const url of [
        verifyFull('127.0.0.1', file('other.crt')),
        withParams(tlsUrl, { sslmode: 'require', sslrootcert: file('other.crt') }),
      ]) {
        const refused = await sandbox.run(['enqueue', 'more.jsonl', '--db', url]);
        expect(refused.code).toBe(1);
        expect(refused.stdout).toBe('');
        expect(refused.stderr).toMatch(
          /^onceq: cannot connect to PostgreSQL at 127\.0\.0\.1:\d+\/onceq_test: the server's TLS certificate is refused: it is not signed by a trusted CA/,
        );
        expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      }
      expect(await counts(sandbox)).toEqual(before);
    } finally {
      sandbox.cleanup();
    }
  }, 120_000);

  test('sslmode=require against a server without TLS is refused: one sentence, exit 1, no fallback to plain', async () => {
    const database = scratchDatabase('tls');
    await database.create();
    const sandbox = cliSandbox();
    try {
      writeFileSync(join(sandbox.cwd, 'events.jsonl'), nEvents(3).jsonl);
      const require = withParams(database.url, { sslmode: 'require' });
      for (const args of [['enqueue', 'events.jsonl'], ['status']]) {
        const refused = await sandbox.run([...args, '--db', require]);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toMatch(
          /^onceq: cannot reach PostgreSQL at .*: the server does not accept TLS, and sslmode asks for it/,
        );
        expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      }
      // The server is there, and nothing was written over a plain connection instead.
      const plain = await sandbox.run(['status', '--db', database.url]);
      expect(plain.code).toBe(2);
      expect(plain.stderr).toContain('no onceq store');
    } finally {
      sandbox.cleanup();
      await database.drop();
    }
  }, 120_000);
});
