// A long session opens at its end: the latest rows are drawn, earlier ones come
// on request. The session is written into a fresh data dir by the hub's own
// store (server/examples/seed_session.rs, built by `cargo test`).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from './expect.mjs';
import { ROOT, makeFolder } from '../hub.mjs';
import { hubAndBrowser } from '../setup.mjs';

const folder = makeFolder();
const dataDir = mkdtempSync(join(tmpdir(), 'hub-e2e-long-'));
let seeded;

// Registered first: the session is written before the hub starts on its data dir.
before(() => {
  // Beside the hub's binary (a CARGO_TARGET_DIR elsewhere too).
  const seed = process.env.HUB_BIN
    ? join(dirname(process.env.HUB_BIN), 'examples/seed_session')
    : join(ROOT, 'target/debug/examples/seed_session');
  seeded = JSON.parse(execFileSync(seed, [dataDir, folder, '1000'], { encoding: 'utf8' }));
});

const setup = hubAndBrowser([], {}, { dataDir });

test('a session of a thousand events opens at its end; earlier rows come on request', async () => {
  const page = await (await setup.browser.newContext()).newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(setup.hub.url);
  await page.waitForSelector('html[data-hydrated="true"]');
  await page.goto(`${setup.hub.base}/?folder=${encodeURIComponent(folder)}`);

  const messages = page.getByTestId('assistant-message');
  const lastAnswer = seeded.lastAnswer.replace(/\*\*|`/g, '');
  await expect(async () => assert.ok((await messages.last().innerText()).trim().endsWith(lastAnswer)));
  const rows = () => page.locator('[data-testid="transcript"] > :not([data-testid="show-earlier"])').count();
  const firstRows = await rows();
  assert.equal(firstRows, 150, 'the latest rows only');

  // Every turn is 22 rows (prompt, 20 calls, answer); 19 turns here are 418 rows.
  const total = seeded.turns * 22;
  const earlier = page.getByTestId('show-earlier');
  assert.equal(await earlier.innerText(), `Show earlier (${total - 150} more)`);
  await earlier.click();
  await expect(async () => assert.equal(await rows(), total));
  assert.equal(await earlier.count(), 0, 'all shown');
  assert.equal(await page.getByTestId('user-message').first().innerText(), 'Read the notes, turn 0.');
  assert.deepEqual(errors, []);
});
