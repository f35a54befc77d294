/**
 * The one rule for whether a suite runs on PostgreSQL, and the helper that declares a
 * suite once per backend.
 *
 * SQLite always runs. PostgreSQL runs when `DATABASE_URL` names a server (`bun run test`
 * starts a throwaway cluster and sets it); a server that does not answer then fails the
 * suite's tests, it never skips them. Without `DATABASE_URL` the PostgreSQL half is
 * skipped visibly, except where PostgreSQL is **required** (`CI` set, or
 * `ONCEQ_REQUIRE_POSTGRES=1`): there it is one failing test that says why, so a suite
 * never vanishes silently from a CI run.
 */
import { describe, test } from 'bun:test';
import { type BackendFactory, postgresFactory, sqliteFactory } from './factories.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** PostgreSQL must run here: `CI` is set, or `ONCEQ_REQUIRE_POSTGRES=1`. */
export function postgresRequired(env: Env = process.env): boolean {
  return Boolean(env.CI) || env.ONCEQ_REQUIRE_POSTGRES === '1';
}

/** What a PostgreSQL suite does here: run on `url`, or not run, and then why. */
export type PostgresPlan =
  | { readonly run: true; readonly url: string }
  | { readonly run: false; readonly required: boolean; readonly reason: string };

export function postgresPlan(env: Env = process.env): PostgresPlan {
  const url = env.DATABASE_URL;
  if (url !== undefined && url !== '') return { run: true, url };
  const required = postgresRequired(env);
  return {
    run: false,
    required,
    reason: required
      ? 'DATABASE_URL is not set, and PostgreSQL is required here (CI or ONCEQ_REQUIRE_POSTGRES=1)'
      : 'DATABASE_URL is not set (run `bun run test`, or set DATABASE_URL)',
  };
}

/**
 * Declares `suite(url)` when PostgreSQL runs here; otherwise one test named after
 * `label` that is skipped, or, when PostgreSQL is required, fails with the reason.
 */
export function onPostgres(label: string, suite: (url: string) => void): void {
  const plan = postgresPlan();
  if (plan.run) {
    suite(plan.url);
    return;
  }
  const name = `postgres: ${label}`;
  if (plan.required) {
    test(name, () => {
      throw new Error(`${name}: ${plan.reason}`);
    });
  } else {
    console.warn(`${name}: skipped, ${plan.reason}`);
    test.skip(`${name} (skipped: ${plan.reason})`, () => {});
  }
}

/**
 * Declares `suite` on SQLite and on PostgreSQL (under {@link onPostgres}'s rule), each
 * with its factory of fresh stores. `label` names the suite in a skip or a failure.
 */
export function forEachBackend(label: string, suite: (factory: BackendFactory) => void): void {
  suite(sqliteFactory);
  onPostgres(label, () => suite(postgresFactory));
}

/** A `describe(name, body)` of PostgreSQL-only tests, under {@link onPostgres}'s rule. */
export function describePostgres(name: string, body: (url: string) => void): void {
  onPostgres(name, (url) => describe(name, () => body(url)));
}
