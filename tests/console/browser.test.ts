// The web console in a real browser (headless Debian Chromium via playwright-core), on
// SQLite and on PostgreSQL: load the overview, filter the DLQ, open a message, preview a
// redrive with v2, sign in, redrive, and see the list and the live totals change.
// Without a browser the suite is skipped with its reason, except under CI, where a
// missing browser is a failure.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { work } from '@onceq/core';
import { handlers } from '@onceq/handler';
import type { Page } from 'playwright-core';
import { forEachBackend } from '../support/backends.ts';
import { browserAvailable, type LaunchedBrowser, launchBrowser } from '../support/browser.ts';
import { type ConsoleFixture, consoleFixture } from '../support/console.ts';
import type { BackendFactory } from '../support/factories.ts';

/** One browser for the whole file (a launch costs seconds on a loaded machine). */
let browser: LaunchedBrowser;

async function rowIds(page: Page): Promise<string[]> {
  return page.locator('tbody td.mono a').allTextContents();
}

/** Hooks start stores, servers and a browser: bun gives hooks 5 s unless told. */
const HOOK_MS = 60_000;
/** A browser walk on a loaded machine: bounded, but not by bun's 5 s default. */
const TEST_MS = 120_000;

function runOn(factory: BackendFactory) {
  describe(`console in a browser on ${factory.name}`, () => {
    let c: ConsoleFixture;
    beforeAll(async () => {
      c = await consoleFixture(factory, { allowWrites: true });
    }, HOOK_MS);
    afterAll(async () => {
      await c?.stop();
    }, HOOK_MS);

    test(
      'overview → DLQ filter → message → preview v2 → sign in → redrive → totals change',
      async () => {
        const page = await browser.context.newPage();
        const problems: string[] = [];
        page.on('pageerror', (e) => problems.push(e.message));
        page.on('console', (m) => {
          if (m.type() === 'error') problems.push(m.text());
        });

        // Overview, with its live control.
        await page.goto(`${c.url}/`);
        await expect(page.getByTestId('count-dead').textContent()).resolves.toBe('4');
        expect(await page.getByRole('heading', { name: 'Totals by category' }).isVisible()).toBe(
          true,
        );
        const pause = page.getByRole('button', { name: 'Pause live updates' });
        await pause.click();
        expect(
          await page
            .getByRole('button', { name: 'Resume live updates' })
            .getAttribute('aria-pressed'),
        ).toBe('true');
        await page.getByRole('button', { name: 'Resume live updates' }).click();

        // The DLQ, filtered by error code and id prefix (server side).
        await page.getByRole('link', { name: 'Dead letters' }).first().click();
        expect((await rowIds(page)).sort()).toEqual(['E0003', 'E0004', 'E0005', 'E0006']);
        await page.getByLabel('Error code').fill('invalid_payload');
        await page.getByLabel('Event id starts with').fill('E0005');
        await page.getByRole('button', { name: 'Apply filters' }).click();
        await page.waitForURL(/prefix=E0005/);
        expect(await rowIds(page)).toEqual(['E0005']);
        await page.getByLabel('Event id starts with').fill('E00');
        await page.getByRole('button', { name: 'Apply filters' }).click();
        await page.waitForURL(/prefix=E00&/);

        // One message in full: the float stays a float.
        await page.getByRole('link', { name: 'E0006' }).click();
        expect(await page.getByTestId('payload').textContent()).toContain(
          '"amount_cents": 10000.0',
        );
        expect(await page.getByTestId('state').textContent()).toBe('dead');
        await page.goBack();

        // Select three, preview with v2.
        for (const id of ['E0003', 'E0004', 'E0005']) await page.getByLabel(`Select ${id}`).check();
        await page.getByLabel('Handler to try').selectOption('v2');
        await page.getByRole('button', { name: 'Preview redrive' }).click();
        expect(await page.getByTestId('preview-summary').textContent()).toContain(
          '2 of 3 would now be accepted, 1 would still be rejected',
        );
        expect(await page.getByTestId('preview-E0005').textContent()).toContain('still rejected');

        // Writes need the token: sign in, come back to the same preview, confirm.
        await page.getByRole('link', { name: "Sign in with the console's token" }).click();
        await page.getByLabel('Console token').fill(c.token as string);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.waitForURL(/\/dlq\/preview\?/);
        await page.getByRole('button', { name: 'Redrive the 2 messages v2 would accept' }).click();
        expect(await page.getByTestId('redrive-result').textContent()).toContain(
          'Redriven 2 messages: E0003, E0004',
        );
        expect(c.logs.some((l) => l.includes('2 messages (previewed with v2): E0003, E0004'))).toBe(
          true,
        );

        // The list changed.
        await page.getByRole('link', { name: 'Back to the dead letters' }).click();
        expect((await rowIds(page)).sort()).toEqual(['E0005', 'E0006']);

        // A worker running v2 processes them; the live overview shows the new totals.
        await page.getByRole('link', { name: 'Overview' }).first().click();
        const summary = await work(c.store, handlers.v2);
        expect(summary.done).toBe(62);
        // The overview reads the store once per second of its clock: the next second shows it.
        c.clock.advance(1);
        await page.getByTestId('total-toy').waitFor();
        expect(await page.getByTestId('total-toy').textContent()).toBe('7000');
        expect(await page.getByTestId('count-dead').textContent()).toBe('2');
        expect(await page.getByTestId('count-ready').textContent()).toBe('0');
        expect(problems).toEqual([]);
        await page.close();
      },
      TEST_MS,
    );

    test(
      'a phone-sized screen keeps every control reachable',
      async () => {
        const page = await browser.context.newPage();
        await page.setViewportSize({ width: 390, height: 800 });
        await page.goto(`${c.url}/dlq`);
        const width = await page.evaluate('document.documentElement.scrollWidth');
        expect(width).toBeLessThanOrEqual(390);
        await page.keyboard.press('Tab');
        expect(await page.evaluate('document.activeElement?.textContent')).toBe('Skip to content');
        await page.close();
      },
      TEST_MS,
    );
  });
}

const available = browserAvailable();
if (available !== true) {
  if (process.env.CI) {
    test('console browser tests need a browser under CI', () => {
      throw new Error(`${available}; under CI a missing browser is a failure`);
    });
  } else {
    test.skip(`console browser tests skipped: ${available}`, () => {});
  }
} else {
  beforeAll(async () => {
    browser = await launchBrowser();
  }, HOOK_MS);
  afterAll(async () => {
    await browser?.close();
  }, HOOK_MS);
  forEachBackend('console in a browser', runOn);
}
