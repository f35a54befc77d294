/**
 * Takes the README's screenshots of the web console: a store of 1,000 demo-like
 * messages (some toys, dead under v1), processed in steps so the throughput chart has
 * samples, served by the console and photographed by Debian's headless chromium.
 *
 *   bun scripts/console-screenshot.ts            writes docs/console-overview.png and
 *                                                docs/console-preview.png
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startConsole } from '@onceq/console';
import { enqueue, openStore, work } from '@onceq/core';
import { modelClock } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { chromium } from 'playwright-core';

const ROOT = join(import.meta.dir, '..');
const dir = mkdtempSync(join(tmpdir(), 'onceq-shot-'));
const clock = modelClock(Math.floor(Date.now() / 1000) - 600);
const store = await openStore(join(dir, 'onceq.db'), { clock });
const categories = ['book', 'pen', 'bag', 'book', 'pen', 'toy', 'book', 'bag', 'pen', 'book'];
const lines: string[] = [];
for (let i = 1; i <= 1000; i++) {
  const category = categories[i % categories.length] as string;
  const amount = i % 97 === 0 ? '0' : String(100 + ((i * 7919) % 9000));
  lines.push(
    `{"event_id":"E${String(i).padStart(4, '0')}","payload":{"category":"${category}","amount_cents":${amount}}}`,
  );
}
await enqueue(store, `${lines.slice(0, 1000).join('\n')}\n`);
const running = startConsole({ store, port: 0, allowWrites: true, log: () => {} });
try {
  // Ten steps of 30 s: a worker does a varying share, the overview samples each step.
  for (let step = 0; step < 10; step++) {
    await work(store, handlers.v1, { max: 40 + ((step * 37) % 90) });
    clock.advance(30);
    await fetch(`${running.url}/`);
    await Bun.sleep(1100);
  }
  const profile = mkdtempSync(join(tmpdir(), 'onceq-shot-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1100, height: 760 },
    colorScheme: 'light',
  });
  try {
    const page = await context.newPage();
    await page.goto(`${running.url}/`);
    await page.screenshot({ path: join(ROOT, 'docs/console-overview.png') });
    await page.goto(
      `${running.url}/login?next=${encodeURIComponent('/dlq/preview?scope=all&handler=v2')}`,
    );
    await page.getByLabel('Console token').fill(running.token as string);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/preview/);
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.screenshot({ path: join(ROOT, 'docs/console-preview.png') });
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
} finally {
  await running.stop();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
console.log('wrote docs/console-overview.png and docs/console-preview.png');
