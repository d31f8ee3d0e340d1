// Time to open a session of 10,000 events in the UI (goal: at most 1 s).
//
// The session is made the real way: a hub with a SQLite data dir, YOLO on, and a
// scripted model whose replies are text deltas and read_file calls, prompt after
// prompt, until the log holds 10,000 events. The hub is then restarted (so the
// log comes from SQLite) and a fresh Chromium tab opens the folder; the time is
// from navigation to the last event's transcript entry being on screen, with
// the page hydrated. Run after a build: `node bench/open_session.mjs`.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startHub, launchBrowser, makeFolder } from '../end2end/hub.mjs';
import { startFakeModel, call, text } from '../end2end/fake-model.mjs';

const TARGET_EVENTS = 10_000;
const RUNS = 5;

const model = await startFakeModel();
const folder = makeFolder({ security: { disableYoloMode: false } });
writeFileSync(join(folder, 'notes.txt'), 'some notes\n');
const args = ['--model-url', model.baseUrl, '--model', 'fake-model'];
let hub = await startHub(args);

async function promptByApi(message) {
  const response = await fetch(`${hub.base}/api/chat/prompt`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${hub.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ folderPath: folder, message }),
  });
  return (await response.text()).trim().split('\n').map((line) => JSON.parse(line));
}

// Each completion: a few words of text, then a read_file call and its result.
let events = 0;
let turn = 0;
let lastSeq = 0;
while (events < TARGET_EVENTS) {
  const replies = [];
  for (let i = 0; i < 40; i++) {
    replies.push(text(`Step ${turn}.${i}: `, 'reading the ', '**notes** ', 'again.'));
    replies.push(call(`c${turn}_${i}`, 'read_file', { file_path: 'notes.txt' }));
  }
  replies.push(text(`Turn ${turn} done.`));
  model.script(...replies);
  const turnEvents = await promptByApi(`turn ${turn}`);
  lastSeq = turnEvents.at(-1).seq;
  events = lastSeq;
  turn += 1;
}
const dataDir = hub.dataDir;
await hub.stop();
hub = await startHub(args, {}, { dataDir });
console.log(`session: ${lastSeq} events (${turn} prompts), served from SQLite after a restart`);

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
        && messages.length > 0 && messages[messages.length - 1].textContent === expected;
    },
    `Turn ${turn - 1} done.`,
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
await model.stop();
