// The page survives what users do while the agent works: switching folders
// while a turn streams and closing the chat leave no task behind that touches
// the gone chat (a panic in the wasm would stop the page), and the "could not
// be reached" alert goes away by itself once the hub is back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { realpathSync } from 'node:fs';
import { expect } from './expect.mjs';
import { startHub, makeFolder, snapshot } from '../hub.mjs';
import { openChat, sendPrompt } from '../chat-page.mjs';
import { modelAndBrowser } from '../setup.mjs';
import { slowText, text } from '../fake-model.mjs';

const setup = modelAndBrowser();

const modelArgs = () => ['--model-url', setup.model.baseUrl, '--model', 'fake-model'];

/** Twenty words, one every `gap` ms. */
const story = (gap) => slowText(gap, ...Array.from({ length: 20 }, (_, i) => `word${i} `));

/**
 * Opens the chat and watches the page: `errors` gets page errors, dialogs and
 * console errors from a Rust panic; `sameDocument()` says the page was never
 * reloaded (a link clicked on a dead page would load a fresh one and hide it).
 */
async function watchedChat(hub, folder) {
  const { page, errors } = await openChat(setup.browser, hub, folder);
  page.on('console', (message) => {
    if (message.type() === 'error' && /panicked|unreachable|RuntimeError/i.test(message.text())) {
      errors.push(`console: ${message.text()}`);
    }
  });
  await page.evaluate(() => { window.__sameDocument = true; });
  const sameDocument = () => page.evaluate(() => window.__sameDocument === true);
  return { page, errors, sameDocument };
}

async function showFolder(page, folder) {
  await page.locator(`[data-testid="folder-list"] a[title="${realpathSync(folder)}"]`).click();
  await expect(async () => assert.equal(await page.getByTestId('current-folder').innerText(), realpathSync(folder)));
}

const lastAnswer = (page) => page.getByTestId('assistant-message').last();

async function sessionStatus(hub, folder) {
  const { body } = await hub.api('/api/projects');
  return body.projects.find((project) => project.folderPath === realpathSync(folder))?.sessions[0]?.status;
}

test('switching folders while a turn streams, and closing the chat, leave the page alive', async () => {
  const hub = await startHub(modelArgs());
  try {
    const first = makeFolder();
    const second = makeFolder();
    const { page, errors, sameDocument } = await watchedChat(hub, second);
    await page.fill('#folder-path', first);
    await page.press('#folder-path', 'Enter');
    await expect(async () => assert.equal(await page.getByTestId('current-folder').innerText(), realpathSync(first)));

    const dropped = [];
    page.on('requestfailed', (request) => {
      dropped.push(`${request.method()} ${new URL(request.url()).pathname} ${request.failure()?.errorText}`);
    });
    setup.model.script(story(250));
    await sendPrompt(page, 'tell a long story');
    await expect(async () => assert.match(await lastAnswer(page).innerText(), /word1/));

    // Away and back while it streams: the first chat goes, the turn runs on in the hub.
    await showFolder(page, second);
    await showFolder(page, first);
    await expect(async () => assert.match(await lastAnswer(page).innerText(), /word\d/));
    assert.equal(await sessionStatus(hub, first), 'running', 'the turn still streams');
    // Close the chat (the hub's name goes to the start page) while it still streams.
    await page.locator('header a[href="/"]').click();
    await expect(async () => assert.equal(await page.getByTestId('current-folder').innerText(), 'No folder open'));
    assert.equal(await page.getByTestId('chat').count(), 0);

    // The turn ends while no chat shows it: nothing left of the closed chats may wake up.
    await expect(async () => assert.equal(await sessionStatus(hub, first), 'idle'), { timeout: 15000 });
    await page.waitForTimeout(500);
    assert.deepEqual(errors, []);
    // And their streams did not linger: each chat's went with it.
    assert.ok(dropped.some((line) => line.startsWith('POST /api/chat/prompt ')), `the prompt's answer was dropped: ${dropped}`);
    assert.ok(dropped.some((line) => /^GET \/api\/sessions\/[^/]+\/events /.test(line)), `the closed chat's follow was aborted: ${dropped}`);

    // The page still works: open the folder, the whole answer is there, a prompt goes through.
    await showFolder(page, first);
    await expect(async () => assert.match(await lastAnswer(page).innerText(), /word0 word1 .*word19/));
    setup.model.script(text('Still here.'));
    await sendPrompt(page, 'are you there?');
    await expect(async () => assert.equal(await lastAnswer(page).innerText(), 'Still here.'));
    assert.equal(await page.locator('html[data-hydrated="true"]').count(), 1);
    assert.ok(await sameDocument(), 'the page was never reloaded');
    assert.deepEqual(errors, []);
  } finally {
    await hub.stop();
  }
});

test('the "could not be reached" alert clears itself when the hub is back', async () => {
  const folder = makeFolder();
  const port = 20000 + Math.floor(Math.random() * 20000);
  const first = await startHub(modelArgs(), {}, { port });
  let firstRuns = true;
  let hub;
  try {
    const { page, errors, sameDocument } = await watchedChat(first, folder);
    setup.model.script(story(200));
    await sendPrompt(page, 'stream for a while');
    await expect(async () => assert.match(await lastAnswer(page).innerText(), /word1/));

    // The hub dies mid-turn: the chat says so.
    await first.kill();
    firstRuns = false;
    const alert = page.getByTestId('chat-error');
    await expect(async () => assert.match(await alert.innerText(), /could not be reached/), { timeout: 10000 });
    // And so does the page's banner when a switch is flipped meanwhile.
    await page.getByTestId('yolo-switch').click();
    const banner = page.getByTestId('error-banner');
    await expect(async () => assert.match(await banner.innerText(), /could not be reached/));
    await snapshot(page, 'hub-unreachable');

    // The hub is back on the same port and data: the page reconnects on its own.
    hub = await startHub(modelArgs(), {}, { port, dataDir: first.dataDir, token: first.token });
    await expect(async () => assert.equal(await alert.count(), 0), { timeout: 15000 });
    await expect(async () => assert.equal(await banner.count(), 0));
    await snapshot(page, 'hub-back');

    // Without a reload, the next prompt goes through.
    setup.model.script(text('Back again.'));
    await sendPrompt(page, 'are you back?');
    await expect(async () => assert.equal(await lastAnswer(page).innerText(), 'Back again.'));
    assert.ok(await sameDocument(), 'the page was never reloaded');
    assert.deepEqual(errors, []);
  } finally {
    if (firstRuns) await first.stop();
    await hub?.stop();
  }
});
