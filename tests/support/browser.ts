/**
 * A real headless Chromium for the console's browser tests: Debian's `/usr/bin/chromium`
 * driven by playwright-core (never `playwright install`, which downloads from outside).
 * Each launch gets a fresh user-data-dir, removed at close.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Flags for a quiet, offline, throwaway browser. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** `true` when a browser can run here, else why not. */
export function browserAvailable(): true | string {
  return existsSync(CHROMIUM)
    ? true
    : `no browser at ${CHROMIUM} (install Debian's chromium: apt-get install -y chromium)`;
}

export interface LaunchedBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<LaunchedBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'onceq-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      timeout: 60_000,
    });
    context.setDefaultTimeout(20_000);
    return {
      context,
      async close() {
        try {
          await context.close();
        } finally {
          rmSync(profile, { recursive: true, force: true });
        }
      },
    };
  } catch (error) {
    rmSync(profile, { recursive: true, force: true });
    throw error;
  }
}
