// The foundation as a user meets it: open the printed URL, open folders, flip
// YOLO, see locks and live settings changes, in real headless Chromium.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { realpathSync } from 'node:fs';
import { expect } from './expect.mjs';
import { makeFolder, writeSettings, snapshot } from '../hub.mjs';
import { hubAndBrowser } from '../setup.mjs';

const setup = hubAndBrowser();

/** A new tab that opened the printed URL; resolves once the page hydrated. */
async function openHub() {
  const context = await setup.browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(setup.hub.url);
  // The token leaves the address bar; the cookie carries it from here on.
  assert.equal(new URL(page.url()).search, '');
  await waitForHydration(page);
  return { page, errors };
}

/** The app marks <html data-hydrated> from an effect, which runs only in a live page. */
async function waitForHydration(page) {
  await page.waitForSelector('html[data-hydrated="true"]', { timeout: 10000 });
}

async function openFolder(page, folder) {
  await page.fill('#folder-path', folder);
  await page.press('#folder-path', 'Enter');
  await expect(async () => assert.equal(await page.getByTestId('current-folder').innerText(), realpathSync(folder)));
}

const switchState = (page) => page.getByTestId('yolo-switch').getAttribute('aria-checked');

test('open a folder, flip YOLO, reload and see the state', async () => {
  const folder = makeFolder();
  const { page, errors } = await openHub();
  await openFolder(page, folder);
  assert.match(page.url(), /\?folder=/);
  // The folder's config arrives just after the folder shows.
  await expect(async () => assert.equal(await page.getByTestId('yolo-source').innerText(), 'default'));
  assert.equal(await switchState(page), 'false');

  await page.getByTestId('yolo-switch').click();
  await expect(async () => assert.equal(await page.getByTestId('yolo-source').innerText(), 'set by you'));
  assert.equal(await switchState(page), 'true');
  await snapshot(page, 'yolo-on');

  await page.reload();
  await expect(async () => assert.equal(await switchState(page), 'true'));
  assert.equal(await page.getByTestId('yolo-source').innerText(), 'set by you');
  // The folder is listed, and the server agrees with what the page shows.
  await expect(async () => assert.match(await page.getByTestId('folder-list').innerText(), new RegExp(folder.split('/').pop())));
  const { body } = await setup.hub.api(`/api/chat/config?folderPath=${encodeURIComponent(folder)}`);
  assert.equal(body.yoloMode, true);
  assert.deepEqual(errors, []);
  await page.context().close();
});

test('a locked folder shows the lock and the switch cannot turn on', async () => {
  const folder = makeFolder({ security: { disableYoloMode: true } });
  const { page } = await openHub();
  await openFolder(page, folder);
  await expect(async () => assert.ok(await page.getByTestId('yolo-lock').isVisible()));
  assert.equal(await switchState(page), 'false');
  assert.equal(await page.getByTestId('yolo-switch').isDisabled(), true);
  assert.match(await page.getByTestId('yolo-note').innerText(), /locked off by security\.disableYoloMode/);
  await snapshot(page, 'locked');
  await page.context().close();
});

test('editing .gemini/settings.json on disk updates the switch without a reload', async () => {
  const folder = makeFolder();
  const { page } = await openHub();
  await openFolder(page, folder);
  assert.equal(await switchState(page), 'false');
  await page.evaluate(() => { window.__marker = 'same page'; });

  // A folder's own file may turn approvals off only once the user trusts the folder.
  writeSettings(folder, { security: { disableYoloMode: false } });
  await expect(async () => assert.ok(await page.getByTestId('trust-banner').isVisible()));
  assert.match(await page.getByTestId('trust-would').innerText(), /YOLO on once you trust this folder/);
  assert.equal(await switchState(page), 'false', 'untrusted: YOLO stays off');
  await snapshot(page, 'trust-banner');
  await page.getByTestId('trust-folder').click();
  await expect(async () => assert.equal(await switchState(page), 'true'));
  assert.equal(await page.getByTestId('trust-banner').count(), 0, 'trusted: the banner goes');
  assert.equal(await page.getByTestId('yolo-source').innerText(), 'from .gemini/settings.json');

  // The Rules panel lists the trust and withdraws it: YOLO goes off and the banner is back.
  await page.getByTestId('rules-button').click();
  const trust = page.getByTestId('rules-trust');
  await expect(async () => assert.match(await trust.innerText(), /^Folder trust\s+Trusted/i));
  await trust.getByTestId('trust-withdraw').click();
  await expect(async () => assert.equal(await switchState(page), 'false'));
  await expect(async () => assert.ok(await page.getByTestId('trust-banner').isVisible()));
  await expect(async () => assert.match(await trust.innerText(), /Not trusted/));
  await page.getByTestId('trust-folder').click();
  await expect(async () => assert.equal(await switchState(page), 'true'));
  await page.getByTestId('rules-close').click();

  writeSettings(folder, { security: { disableYoloMode: true } });
  await expect(async () => assert.ok(await page.getByTestId('yolo-lock').isVisible()));
  assert.equal(await switchState(page), 'false');

  writeSettings(folder, '{ not json');
  await expect(async () => assert.equal(await page.getByTestId('yolo-lock').count(), 0));
  assert.equal(await page.getByTestId('yolo-source').innerText(), 'default');
  assert.equal(await page.evaluate(() => window.__marker), 'same page', 'no reload happened');
  await page.context().close();
});

test('a missing folder is a clear error and opens nothing', async () => {
  const { page } = await openHub();
  const before = (await setup.hub.api('/api/projects')).body.projects.length;
  await page.fill('#folder-path', '/no/such/folder');
  await page.press('#folder-path', 'Enter');
  await expect(async () => assert.match(await page.getByTestId('open-folder-error').innerText(), /does not exist/));
  assert.equal(new URL(page.url()).search, '');
  assert.equal((await setup.hub.api('/api/projects')).body.projects.length, before);
  await page.context().close();
});

test('without the token the page asks for the printed URL', async () => {
  const context = await setup.browser.newContext();
  const page = await context.newPage();
  const response = await page.goto(setup.hub.base + '/');
  assert.equal(response.status(), 401);
  assert.match(await page.locator('body').innerText(), /needs its launch token/);
  const wrong = await page.goto(setup.hub.base + '/?token=wrong-token');
  assert.equal(wrong.status(), 401);
  await context.close();
});
