// Time to open a session of 10,000 events in the UI (goal: at most 1 s).
//
// A session of at least 10,000 events is written into a fresh data dir, a hub is
// started on it, and a fresh Chromium tab opens the folder; the time is from
// navigation to the last answer being on screen in a hydrated page.
// Run after a build: `node bench/open_session.mjs` (HUB_BIN picks the binary).
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHub, launchBrowser, makeFolder } from '../end2end/hub.mjs';

const TARGET_EVENTS = 10_000;
const RUNS = 5;

// The session is written by the hub's own store (server/examples/seed_session.rs):
// generating it through a model would resend an ever longer conversation.
const folder = makeFolder();
const dataDir = mkdtempSync(join(tmpdir(), 'hub-bench-'));
const seeded = JSON.parse(execFileSync('cargo', ['run', '-q', '-p', 'agent-hub-server', '--example', 'seed_session', '--',
  dataDir, folder, String(TARGET_EVENTS)], { encoding: 'utf8' }));
const hub = await startHub([], {}, { dataDir });
const lastSeq = seeded.events;
console.log(`session: ${lastSeq} events (${seeded.turns} prompts, each 20 read_file calls and a markdown answer), from SQLite`);

const browser = await launchBrowser();
const times = [];
for (let run = 0; run < RUNS; run++) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(hub.url); // sets the cookie
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
    const entries = await page.locator('[data-testid="tool-entry"]').count();
    console.log(`rendered: ${entries} tool calls, ${await page.getByTestId('assistant-message').count()} messages`);
  }
  await context.close();
}
times.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)];
console.log(`open a ${lastSeq}-event session: median ${median} ms, best ${times[0]} ms, worst ${times.at(-1)} ms over ${RUNS} loads`);
console.log(`goal <= 1000 ms: ${median <= 1000 ? 'met' : 'NOT met'}`);
await browser.close();
await hub.stop();
