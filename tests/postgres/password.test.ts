/**
 * A PostgreSQL URL without a password, against a server that asks for one: a cluster
 * of the test's own (scripts/pg-cluster.sh) whose pg_hba.conf asks one role for a
 * scram-sha-256 password. onceq says so in one sentence, and the advice it gives
 * (~/.pgpass) works.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { describePostgres } from '../support/backends.ts';
import { cliSandbox, DEMO_JSONL } from '../support/cli.ts';
import { runProcess } from '../support/spawn.ts';

const CLUSTER_SCRIPT = resolve(import.meta.dir, '../../scripts/pg-cluster.sh');
/** initdb + start on a loaded machine can take well over bun's hook default. */
const CLUSTER_TIMEOUT_MS = 180_000;
const ROLE = 'needs_password';
const PASSWORD = ['pw', 'for', 'the', 'test'].join('-');

const dir = mkdtempSync(join(tmpdir(), 'onceq-pw-'));
const stateFile = join(dir, 'pg.state');

function clusterCommand(command: 'start' | 'stop') {
  const firstPort = Number(process.env.ONCEQ_PG_FIRST_PORT ?? 54330) + 45;
  return runProcess(['bash', CLUSTER_SCRIPT, command], {
    env: { ...process.env, ONCEQ_PG_STATE: stateFile, ONCEQ_PG_FIRST_PORT: String(firstPort) },
  });
}

/** Runs `sql` as the cluster's superuser (trust on loopback). */
async function superuser(url: string, sql: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result = await client.query(sql);
    return String(Object.values(result.rows[0] ?? {})[0] ?? '');
  } finally {
    await client.end();
  }
}

describePostgres('a URL without a password, a server that asks for one', () => {
  let roleUrl = '';
  beforeAll(async () => {
    const started = await clusterCommand('start');
    if (started.code !== 0) throw new Error(`could not start the cluster:\n${started.stderr}`);
    const url = started.stdout.trim();
    await superuser(url, `CREATE ROLE ${ROLE} LOGIN SUPERUSER PASSWORD '${PASSWORD}'`);
    const hba = await superuser(url, 'SHOW hba_file');
    // First match wins: the role needs a scram-sha-256 password, everyone else is trusted.
    writeFileSync(hba, `host all ${ROLE} 127.0.0.1/32 scram-sha-256\n${readFileSync(hba, 'utf8')}`);
    await superuser(url, 'SELECT pg_reload_conf()');
    const u = new URL(url);
    u.username = ROLE;
    roleUrl = u.toString();
  }, CLUSTER_TIMEOUT_MS);
  afterAll(async () => {
    await clusterCommand('stop');
    rmSync(dir, { recursive: true, force: true });
  }, CLUSTER_TIMEOUT_MS);

  test('one sentence naming the server and where the password goes; with ~/.pgpass it connects', async () => {
    const box = cliSandbox();
    try {
      const home = { HOME: box.cwd };
      const refused = await box.run(['status', '--db', roleUrl], { env: home });
      expect(refused.code).toBe(1);
      const u = new URL(roleUrl);
      expect(refused.stderr).toBe(
        `onceq: cannot connect to PostgreSQL at ${u.host}${u.pathname}: the server asks for a password and the URL has none; set it in ONCEQ_DB or ~/.pgpass\n`,
      );
      const pgpass = join(box.cwd, '.pgpass');
      writeFileSync(pgpass, `${u.hostname}:${u.port}:*:${ROLE}:${PASSWORD}\n`);
      chmodSync(pgpass, 0o600);
      const ok = await box.run(['enqueue', DEMO_JSONL, '--db', roleUrl], { env: home });
      expect(ok.code).toBe(0);
      expect(ok.stdout).toBe('accepted 4, duplicates 1\n');
    } finally {
      box.cleanup();
    }
  });
});
