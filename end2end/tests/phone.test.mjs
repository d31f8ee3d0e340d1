// The hub on a phone (issue 26): in a 390×844 touch viewport the start page
// opens on "Waiting on you" across folders, a card is one tap away and readable
// without zooming (no page-wide horizontal scroll), its buttons are 44 px high,
// Yes runs the call; axe-core finds nothing in light and dark. The installable
// app: the manifest and its icons, and a service worker that keeps the shell
// only (never an /api/ answer, never a page) and shows an offline page when the
// hub cannot be reached. At desktop width the layout stays as it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { makeFolder, startHub, snapshot } from '../hub.mjs';
import { hubWithModel } from '../setup.mjs';
import { violations } from '../axe.mjs';
import { call, text } from '../fake-model.mjs';

const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };

const setup = hubWithModel();

/** A phone's page on the hub's start page, hydrated; `errors` collects page errors. */
async function phonePage(hub, colorScheme = 'light') {
  const context = await setup.browser.newContext({ ...PHONE, colorScheme });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(hub.url);
  await page.waitForSelector('html[data-hydrated="true"]', { timeout: 10000 });
  return { page, errors };
}

/** Starts a turn in `folder` through the API; it returns once the agent waits on a card. */
async function waitingCard(folder, reply, message = 'go') {
  setup.model.script(reply);
  const answer = await setup.hub.stream('/api/chat/prompt', { folderPath: folder, message });
  assert.equal(answer.status, 200);
  assert.ok(['waiting_approval', 'waiting_input'].includes(answer.events.at(-1).status), JSON.stringify(answer.events.at(-1)));
}

const noSideScroll = (page) => page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);

async function assertNoSideScroll(page, where) {
  const [scrollWidth, innerWidth] = await noSideScroll(page);
  assert.ok(scrollWidth <= innerWidth, `${where}: the page is ${scrollWidth} px wide in a ${innerWidth} px viewport`);
}

/** The heights of the card's visible buttons, by their text. */
const buttonHeights = (card) => card.locator('button:visible').evaluateAll((buttons) =>
  buttons.map((button) => [button.innerText.trim(), button.getBoundingClientRect().height]));

async function assertTappable(card, where) {
  const heights = await buttonHeights(card);
  assert.ok(heights.length >= 4, `${where}: the card's buttons are there (${JSON.stringify(heights)})`);
  for (const [label, height] of heights) assert.ok(height >= 44, `${where}: '${label}' is ${height} px high`);
}

/** The inbox entry of `folder`, on the start page. */
const entryOf = (page, folder) => page.locator(`[data-testid="inbox-item"][title="${realpathSync(folder)}"]`);

test('on a phone the start page opens on Waiting on you; a tap opens the card, readable and tappable; Yes runs it', async () => {
  const shell = makeFolder();
  const edit = makeFolder();
  const command = 'echo phone-approved && echo a-long-argument-that-would-not-fit-on-a-phone-screen-in-one-line --with-many --flags';
  await waitingCard(shell, call('ph1', 'run_shell_command', { command }));
  writeFileSync(join(edit, 'notes.txt'), Array.from({ length: 30 }, (_, i) => `line ${i} of a file whose lines are long enough to overflow a phone`).join('\n') + '\n');
  await waitingCard(edit, call('ph2', 'replace', { file_path: 'notes.txt', old_string: 'line 20 of', new_string: 'line twenty of' }));

  const { page, errors } = await phonePage(setup.hub);
  // The inbox is the first thing under the header, above opening a folder.
  const inbox = page.getByTestId('inbox');
  await expect(async () => assert.ok((await page.getByTestId('inbox-item').count()) >= 2));
  const inboxBox = await inbox.boundingBox();
  const formBox = await page.getByTestId('open-folder-form').boundingBox();
  assert.ok(inboxBox.y < formBox.y, 'Waiting on you comes before opening a folder');
  assert.ok(inboxBox.y < 120, `Waiting on you is at the top (${inboxBox.y} px)`);
  assert.match(await inbox.locator('h2').innerText(), /waiting on you/i);
  await page.getByTestId('inbox-calls').waitFor();
  await assertNoSideScroll(page, 'the start page');
  await snapshot(page, 'phone-start');

  // One tap on the entry: the card, its command whole and inside the screen.
  await entryOf(page, shell).tap();
  const card = page.getByTestId('approval-card');
  await expect(async () => assert.equal(await card.getAttribute('data-tool-id'), 'ph1'));
  const shown = card.getByTestId('tool-parameters');
  await expect(async () => assert.match((await shown.innerText()).replace(/\s+/g, ''), new RegExp(command.replace(/\s+/g, '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))));
  const cardBox = await card.boundingBox();
  assert.ok(cardBox.x >= 0 && cardBox.x + cardBox.width <= 390, `the card fits the screen (${JSON.stringify(cardBox)})`);
  const commandBox = await shown.locator('pre').first().boundingBox();
  assert.ok(commandBox.x + commandBox.width <= 390, 'the command wraps inside the screen');
  await assertNoSideScroll(page, 'the shell card');
  await assertTappable(card, 'the shell card');
  // Readable without zooming: the command is in 12 px type or larger.
  assert.ok(parseFloat(await shown.locator('pre').first().evaluate((pre) => getComputedStyle(pre).fontSize)) >= 12);
  await snapshot(page, 'phone-card');

  // Yes, tapped: the command runs and the transcript shows its output.
  setup.model.script(text('Ran it.'));
  await card.getByTestId('card-approve').tap();
  const entry = page.locator('[data-testid="tool-entry"][data-tool-id="ph1"]');
  await expect(async () => assert.equal(await entry.getAttribute('data-state'), 'success'), { timeout: 10000 });
  await entry.locator('summary').tap();
  assert.match(await entry.getByTestId('tool-output').innerText(), /phone-approved/);
  await assertNoSideScroll(page, 'the transcript after the call');

  // The edit: its path and diff inside the screen, its buttons tappable.
  await page.goto(setup.hub.url);
  await page.waitForSelector('html[data-hydrated="true"]');
  await entryOf(page, edit).tap();
  await expect(async () => assert.equal(await card.getAttribute('data-tool-id'), 'ph2'));
  await card.getByTestId('diff').waitFor();
  assert.equal(await card.getByTestId('diff-path').innerText(), 'notes.txt');
  assert.ok(await card.getByTestId('diff-path').isVisible());
  const diffBox = await card.getByTestId('diff').boundingBox();
  assert.ok(diffBox.x + diffBox.width <= 390, 'the diff fits the screen');
  await assertNoSideScroll(page, 'the edit card');
  await assertTappable(card, 'the edit card');
  assert.deepEqual(errors, []);
  await page.context().close();
});

test('a question card on a phone has buttons 44 px high', async () => {
  const folder = makeFolder();
  await waitingCard(folder, call('phq', 'ask_user', { prompt: 'Which license?', input_type: 'choice', choices: ['MIT', 'Apache-2.0'] }));
  const { page, errors } = await phonePage(setup.hub);
  await entryOf(page, folder).tap();
  const card = page.getByTestId('question-card');
  await card.waitFor();
  await assertNoSideScroll(page, 'the question card');
  const heights = await buttonHeights(card);
  assert.ok(heights.length >= 3, JSON.stringify(heights));
  for (const [label, height] of heights) assert.ok(height >= 44, `'${label}' is ${height} px high`);
  assert.deepEqual(errors, []);
  await page.context().close();
});

for (const scheme of ['light', 'dark']) {
  test(`no axe violation on a phone, in ${scheme}: the start page and a card`, async () => {
    const folder = makeFolder();
    await waitingCard(folder, call(`pa-${scheme}`, 'run_shell_command', { command: `echo axe-${scheme}` }));
    const { page, errors } = await phonePage(setup.hub, scheme);
    await page.getByTestId('inbox-calls').waitFor();
    assert.deepEqual(await violations(page), [], `the start page in ${scheme}`);
    await entryOf(page, folder).tap();
    await page.locator(`[data-testid="approval-card"][data-tool-id="pa-${scheme}"]`).waitFor();
    await page.getByTestId('session-list').waitFor();
    assert.deepEqual(await violations(page), [], `the card in ${scheme}`);
    await snapshot(page, `phone-card-${scheme}`);
    assert.deepEqual(errors, []);
    await page.context().close();
  });
}

test('the app installs: a manifest with its icons, linked from the page', async () => {
  const { page } = await phonePage(setup.hub);
  const head = await page.evaluate(() => ({
    manifest: document.querySelector('link[rel="manifest"]')?.getAttribute('href'),
    credentials: document.querySelector('link[rel="manifest"]')?.getAttribute('crossorigin'),
    themes: [...document.querySelectorAll('meta[name="theme-color"]')].map((meta) => meta.content),
    touchIcon: document.querySelector('link[rel="apple-touch-icon"]')?.getAttribute('href'),
  }));
  assert.equal(head.manifest, '/manifest.webmanifest');
  assert.equal(head.credentials, 'use-credentials', 'the manifest is fetched with the cookie every path needs');
  assert.equal(head.themes.length, 2);
  const manifest = await page.evaluate(async (href) => {
    const response = await fetch(href);
    return { status: response.status, type: response.headers.get('content-type'), body: await response.json() };
  }, head.manifest);
  assert.equal(manifest.status, 200);
  assert.equal(manifest.type, 'application/manifest+json');
  const { body } = manifest;
  assert.equal(body.name, 'Agent Hub');
  assert.equal(body.short_name, 'Agent Hub');
  assert.equal(body.start_url, '/');
  assert.equal(body.display, 'standalone');
  assert.match(body.theme_color, /^#[0-9a-f]{6}$/);
  assert.match(body.background_color, /^#[0-9a-f]{6}$/);
  const icons = [...body.icons, { src: head.touchIcon, sizes: '180x180', type: 'image/png' }];
  assert.ok(body.icons.some((icon) => icon.sizes === '192x192'));
  assert.ok(body.icons.some((icon) => icon.sizes === '512x512' && (icon.purpose ?? 'any').includes('any')));
  assert.ok(body.icons.some((icon) => icon.purpose === 'maskable'));
  for (const icon of icons) {
    const got = await page.evaluate(async (src) => {
      const response = await fetch(src);
      const bitmap = await createImageBitmap(await response.blob());
      return { status: response.status, type: response.headers.get('content-type'), size: `${bitmap.width}x${bitmap.height}` };
    }, icon.src);
    assert.deepEqual(got, { status: 200, type: 'image/png', size: icon.sizes }, icon.src);
  }
  await page.context().close();
});

test('the service worker keeps the shell only: no /api/ answer, no page; offline, it says the hub cannot be reached', async () => {
  // A hub of its own, stopped at the end to see the offline page.
  const hub = await startHub(['--model-url', setup.model.baseUrl, '--model', 'fake-model']);
  let running = true;
  try {
    const folder = makeFolder();
    const { page, errors } = await phonePage(hub);
    const worker = await page.evaluate(async () => {
      const registration = await navigator.serviceWorker.ready;
      const response = await fetch('/sw.js');
      return {
        state: registration.active?.state,
        scope: registration.scope,
        type: response.headers.get('content-type'),
        cacheControl: response.headers.get('cache-control'),
      };
    });
    assert.equal(worker.scope, `${hub.base}/`);
    assert.match(worker.type, /javascript/);
    assert.equal(worker.cacheControl, 'no-cache');
    // Web Push's handlers come in with the import, its first statement (a failed import fails the install).
    const script = await page.evaluate(async () => (await fetch('/sw.js')).text());
    assert.match(script.split('\n').filter((line) => !line.startsWith('//'))[0], /^importScripts\('\/sw-push\.js'\);$/);
    await expect(async () => assert.equal(await page.evaluate(async () => (await navigator.serviceWorker.ready).active?.state), 'activated'));

    // From the next load the worker controls the page: open a folder, make API calls.
    await page.reload();
    await page.waitForSelector('html[data-hydrated="true"]');
    assert.ok(await page.evaluate(() => navigator.serviceWorker.controller !== null), 'the page is controlled');
    await page.fill('#folder-path', folder);
    await page.press('#folder-path', 'Enter');
    await page.getByTestId('chat').waitFor();
    const first = await page.evaluate(async () => (await (await fetch('/api/projects')).json()).projects.length);
    await hub.api('/api/chat/open', { method: 'POST', body: JSON.stringify({ folderPath: makeFolder() }) });
    const second = await page.evaluate(async () => (await (await fetch('/api/projects')).json()).projects.length);
    assert.equal(second, first + 1, 'an /api/ answer is fresh, never a kept one');

    const cached = await page.evaluate(async () => {
      const urls = [];
      for (const name of await caches.keys()) {
        for (const request of await (await caches.open(name)).keys()) urls.push([name, new URL(request.url).pathname + new URL(request.url).search]);
      }
      return urls;
    });
    const paths = cached.map(([, path]) => path);
    assert.ok(cached.every(([name]) => name.startsWith('agent-hub-shell-')), JSON.stringify(cached));
    assert.ok(!paths.some((path) => path.startsWith('/api')), `no /api/ answer is kept: ${paths}`);
    const shellFile = /^\/(pkg\/[^?]+|offline\.html|manifest\.webmanifest|favicon\.svg|icon-[a-z0-9-]+\.png|apple-touch-icon\.png)$/;
    for (const path of paths) assert.match(path, shellFile, 'only the shell is kept');
    for (const needed of ['/offline.html', '/manifest.webmanifest', '/pkg/agent_hub.wasm', '/pkg/agent_hub.css']) {
      assert.ok(paths.includes(needed), `${needed} is kept: ${paths}`);
    }
    assert.deepEqual(errors, []);

    // The hub stops: a reload shows the offline page, not the browser's error.
    await hub.stop();
    running = false;
    await page.reload();
    assert.match(await page.locator('h1').innerText(), /not reachable/);
    await page.context().close();
  } finally {
    if (running) await hub.stop();
  }
});

test('at desktop width the layout is as before: the sidebar beside the page, the inbox under the open folders', async () => {
  const folder = makeFolder();
  await waitingCard(folder, call('pd1', 'run_shell_command', { command: 'echo desk' }));
  const context = await setup.browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(`${setup.hub.base}/?folder=${encodeURIComponent(folder)}&token=${setup.hub.token}`);
  await page.waitForSelector('html[data-hydrated="true"]');
  await page.getByTestId('approval-card').waitFor();
  const inbox = await page.getByTestId('inbox').boundingBox();
  const folders = await page.getByTestId('folder-list').boundingBox();
  const panel = await page.getByTestId('folder-panel').boundingBox();
  assert.ok(inbox.y > folders.y, 'the inbox is under the open folders');
  assert.ok(panel.x > inbox.x + inbox.width, 'the folder sits beside the sidebar');
  assert.ok(await page.getByTestId('current-folder').isVisible());
  const heights = await buttonHeights(page.getByTestId('approval-card'));
  assert.ok(heights.length >= 4 && heights.every(([, height]) => height < 44),
    `the card's buttons keep their desktop size: ${JSON.stringify(heights)}`);
  await context.close();
});
