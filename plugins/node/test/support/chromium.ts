import { existsSync } from "node:fs";
import { afterAll, beforeAll } from "vitest";
import { chromium, type Browser } from "playwright-core";

/** Debian's chromium, which .ci/run installs. */
const CHROMIUM = "/usr/bin/chromium";

/** Whether it is here. Outside CI a machine without it skips the browser tests; in CI it must be there. */
export const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  if (process.env.CI === "true") throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  console.warn(`skipping the headless chromium tests: ${CHROMIUM} is missing (apt-get install -y chromium)`);
}

/**
 * A headless chromium for the tests of the describe block this is called in: launched before them
 * (before the block's own beforeAll hooks registered after this call), closed after them.
 */
export function headlessChromium(): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });
  return () => {
    if (!browser) throw new Error("headless chromium is not launched: call browser() inside a test or a hook, not while the block is collected");
    return browser;
  };
}
