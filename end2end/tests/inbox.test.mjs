// One inbox for all folders: waiting sessions listed across folders, their count
// in the tab title, a desktop notification for a new card while the tab is
// hidden (permission asked once), and a card that outlives a server restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { basename } from 'node:path';
import { realpathSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { startHub, makeFolder, snapshot } from '../hub.mjs';
import { modelAndBrowser } from '../setup.mjs';
import { call, text } from '../fake-model.mjs';

const setup = modelAndBrowser();

const modelArgs = () => ['--model-url', setup.model.baseUrl, '--model', 'fake-model'];

/** A page whose Notification and document.hidden are under the test's control. */
async function newPage() {
  const context = await setup.browser.newContext();
  await context.addInitScript(() => {
    window.__notes = [];
    window.__asked = 0;
    window.__hidden = false;
    Object.defineProperty(Document.prototype, 'hidden', { get: () => window.__hidden, configurable: true });
    window.Notification = class {
      static permission = 'default';
      static requestPermission() {
        window.__asked += 1;
        window.Notification.permission = 'granted';
        return Promise.resolve('granted');
      }
      constructor(title, options) { window.__notes.push({ title, body: options?.body }); }
    };
  });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  return { page, errors };
}

async function openFolder(page, hub, folder) {
  await page.goto(`${hub.base}/?folder=${encodeURIComponent(folder)}&token=${hub.token}`);
  await page.waitForSelector('html[data-hydrated="true"]', { timeout: 10000 });
  await expect(async () => assert.equal(await page.getByTestId('current-folder').innerText(), realpathSync(folder)));
}

async function prompt(page, message) {
  await page.fill('#prompt-input', message);
  // Enter sends only once the page can (its session loaded): under load, a key
  // pressed before that was lost and the test waited 30 s for a card.
  await expect(async () => assert.equal(await page.getByRole('button', { name: 'Send', exact: true }).isDisabled(), false));
  await page.press('#prompt-input', 'Enter');
}

/** Prompts through the API, as another tab or a script would. */
async function promptByApi(hub, folder, message) {
  const response = await fetch(`${hub.base}/api/chat/prompt`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${hub.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ folderPath: folder, message }),
  });
  assert.equal(response.status, 200);
  return (await response.text()).trim().split('\n').map((line) => JSON.parse(line));
}

test('waiting sessions of every folder are listed, counted in the title, and notified when hidden', async () => {
  const hub = await startHub(modelArgs());
  try {
    const first = makeFolder();
    const second = makeFolder();
    const { page, errors } = await newPage();
    await openFolder(page, hub, first);
    assert.equal(await page.title(), 'Agent Hub');
    assert.equal(await page.getByTestId('inbox-item').count(), 0);

    setup.model.script(call('a1', 'run_shell_command', { command: 'echo one' }));
    await prompt(page, 'first');
    await page.getByTestId('approval-card').waitFor();
    await expect(async () => assert.equal(await page.title(), '(1) Agent Hub'));
    assert.equal(await page.evaluate(() => window.__asked), 1, 'permission asked on the first prompt');
    assert.equal(await page.evaluate(() => window.__notes.length), 0, 'no notification while the tab is visible');

    // The tab is hidden; another folder's agent stops at a card.
    await page.evaluate(() => { window.__hidden = true; });
    setup.model.script(call('b1', 'write_file', { file_path: 'b.txt', content: 'b' }));
    const events = await promptByApi(hub, second, 'second');
    assert.equal(events.at(-1).status, 'waiting_approval');
    await expect(async () => assert.equal(await page.title(), '(2) Agent Hub'));
    const items = page.getByTestId('inbox-item');
    await expect(async () => assert.equal(await items.count(), 2));
    assert.match(await items.nth(1).innerText(), new RegExp(basename(second)));
    const notes = await page.evaluate(() => window.__notes);
    assert.equal(notes.length, 1);
    assert.equal(notes[0].title, 'Agent Hub: action required');
    assert.match(notes[0].body, new RegExp(`${basename(second)}: A tool call waits for your approval.`));
    await snapshot(page, 'inbox');

    // Following the inbox opens that folder's card; deciding it empties the entry.
    await page.evaluate(() => { window.__hidden = false; });
    await items.nth(1).click();
    await expect(async () => assert.equal(await page.getByTestId('approval-card').getAttribute('data-tool-id'), 'b1'));
    setup.model.script(text('Written.'));
    await expect(async () => assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'approval-card'));
    await page.keyboard.press('1');
    await expect(async () => assert.equal(await page.title(), '(1) Agent Hub'));
    // The title moves when the call starts; the file is there once it ran.
    await expect(async () => assert.equal(readFileSync(join(second, 'b.txt'), 'utf8'), 'b'));
    // The turn ends before the next prompt: a prompt sent while it still runs is refused as busy.
    await expect(async () => assert.equal(await page.getByTestId('assistant-message').last().innerText(), 'Written.'));
    await expect(async () => assert.equal(await page.getByRole('button', { name: 'Send', exact: true }).isDisabled(), false));
    setup.model.script(text('ok'));
    await prompt(page, 'thanks');
    await expect(async () => assert.equal(await page.getByTestId('assistant-message').last().innerText(), 'ok'));
    assert.equal(await page.evaluate(() => window.__asked), 1, 'asked once only');
    assert.deepEqual(errors, []);
  } finally {
    await hub.stop();
  }
});

test('a card open when the server is killed is there after a restart, and can be decided', async () => {
  const folder = makeFolder();
  const port = 20000 + Math.floor(Math.random() * 20000);
  const first = await startHub(modelArgs(), {}, { port });
  let page;
  try {
    ({ page } = await newPage());
    await openFolder(page, first, folder);
    setup.model.script(call('k1', 'run_shell_command', { command: 'echo survived > kept.txt' }));
    await prompt(page, 'survive');
    await page.getByTestId('approval-card').waitFor();
  } finally {
    // Killed whatever happened: a hub left running keeps node from exiting.
    await first.kill();
  }

  const hub = await startHub(modelArgs(), {}, { port, dataDir: first.dataDir, token: first.token });
  try {
    await page.reload();
    await page.waitForSelector('html[data-hydrated="true"]', { timeout: 10000 });
    await expect(async () => assert.equal(await page.getByTestId('approval-card').getAttribute('data-tool-id'), 'k1'));
    assert.equal(await page.getByTestId('status-badge').first().innerText(), 'waiting approval');
    setup.model.script(text('Done after the restart.'));
    await page.getByTestId('card-approve').click();
    await expect(async () => assert.equal(await page.getByTestId('assistant-message').last().innerText(), 'Done after the restart.'));
    assert.equal(readFileSync(join(folder, 'kept.txt'), 'utf8'), 'survived\n');
  } finally {
    await hub.stop();
  }
});
