// What the browser benchmarks share: a seeded session, a few statistics, and
// the time to open a long session (bench/open_session.mjs, bench/first-load.mjs).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, startHub, launchBrowser, makeFolder } from '../end2end/hub.mjs';

/**
 * Writes a session of at least `events` events for `folder` into `dataDir`,
 * through the hub's own store (server/examples/seed_session.rs): generating it
 * through a model would resend an ever longer conversation. Returns what the
 * example prints: `{sessionId, events, turns, lastAnswer}`.
 *
 * An example binary left by an earlier build is run as is: `cargo run` would
 * rebuild it, and wait on the build lock, whenever a build runs beside the
 * bench. The seeded data is in the schema of the store that wrote it: a kept
 * build older than that store (bench/keep-build) may not read it.
 */
export function seedSession(dataDir, folder, events) {
  const args = [dataDir, folder, String(events)];
  const built = ['target/release/examples/seed_session', 'target/debug/examples/seed_session']
    .map((path) => join(ROOT, path))
    .filter((path) => existsSync(path))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  const output = built
    ? execFileSync(built, args, { encoding: 'utf8' })
    // Neither profile has built the example yet: only then does cargo build it.
    : execFileSync('cargo', ['run', '-q', '-p', 'agent-hub-server', '--example', 'seed_session', '--', ...args],
      { cwd: ROOT, encoding: 'utf8' });
  return JSON.parse(output);
}

/** A fresh folder with a seeded session in a fresh data dir; `remove()` deletes both. */
export function seededFolder(events) {
  const folder = makeFolder();
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-bench-'));
  const seeded = seedSession(dataDir, folder, events);
  const remove = () => {
    rmSync(folder, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { folder, dataDir, seeded, remove };
}

/** Median, min and max of a list of numbers. */
export function stats(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const count = sorted.length;
  if (count === 0) return { median: null, min: null, max: null, count };
  const middle = Math.floor(count / 2);
  const median = count % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  const tenth = (value) => Math.round(value * 10) / 10;
  return { median: tenth(median), min: tenth(sorted[0]), max: tenth(sorted.at(-1)), count };
}

/**
 * Time to open a session of `events` events: from navigation to the last
 * answer on screen in a hydrated page, over `runs` loads, each in a fresh
 * browser context. `hubArgs` go to the hub (e.g. `--site-root`); `log` hears
 * what was seeded and rendered. Returns `{events, turns, rendered, times, ...stats}`.
 */
export async function measureOpenSession({ events = 10_000, runs = 5, hubArgs = [], log = () => {} } = {}) {
  const { folder, dataDir, seeded, remove } = seededFolder(events);
  log(`session: ${seeded.events} events (${seeded.turns} prompts, each 20 read_file calls and a markdown answer), from SQLite`);
  const hub = await startHub(hubArgs, {}, { dataDir });
  const browser = await launchBrowser();
  const times = [];
  let rendered;
  try {
    for (let run = 0; run < runs; run++) {
      const context = await browser.newContext();
      const page = await context.newPage();
      // The token's cookie is set by a first load of the page, so the timed
      // load finds the assets in the context's cache (revalidated: no-cache):
      // this times opening a session in a running hub, not a cold first load.
      await page.goto(hub.url);
      await page.waitForSelector('html[data-hydrated="true"]');
      const started = Date.now();
      await page.goto(`${hub.base}/?folder=${encodeURIComponent(folder)}`);
      await page.waitForFunction(
        (expected) => {
          const messages = document.querySelectorAll('[data-testid="assistant-message"]');
          return document.documentElement.dataset.hydrated === 'true'
            && messages.length > 0 && messages[messages.length - 1].textContent.trim().endsWith(expected);
        },
        seeded.lastAnswer.replace(/\*\*|`/g, ''),
        { timeout: 60000, polling: 'raf' },
      );
      times.push(Date.now() - started);
      if (run === 0) {
        rendered = {
          toolCalls: await page.locator('[data-testid="tool-entry"]').count(),
          messages: await page.getByTestId('assistant-message').count(),
        };
        log(`rendered: ${rendered.toolCalls} tool calls, ${rendered.messages} messages`);
      }
      await context.close();
    }
  } finally {
    await browser.close();
    await hub.stop();
    remove();
  }
  return { events: seeded.events, turns: seeded.turns, rendered, times, ...stats(times) };
}
