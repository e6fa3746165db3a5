// Debian's Chromium driven by playwright-core: never a browser download, a fresh profile each time.
// Playwright refuses `--user-data-dir` among launch() args, so the fresh profile goes through
// launchPersistentContext(), which passes exactly that flag to Chromium.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM_BIN = '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function haveChromium(): boolean {
  return existsSync(CHROMIUM_BIN);
}

export interface TestBrowser {
  context: BrowserContext;
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

export async function launchChromium(opts: { viewport?: { width: number; height: number } } = {}): Promise<TestBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'jupiter-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_BIN,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: opts.viewport ?? { width: 1440, height: 1000 },
  });
  return {
    context,
    newPage: () => context.newPage(),
    async close() {
      await context.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
