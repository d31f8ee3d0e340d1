// The page's address without a router library (app/src/location.rs): a folder
// link changes the query in place, back and forward follow it, a reload and a
// shared link open the same view, and each page has its title.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { realpathSync } from 'node:fs';
import { expect } from './expect.mjs';
import { makeFolder } from '../hub.mjs';
import { hubAndBrowser } from '../setup.mjs';

const setup = hubAndBrowser();

async function newPage() {
  const context = await setup.browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => message.type() === 'error' && errors.push(message.text()));
  await page.goto(setup.hub.url);
  await page.waitForSelector('html[data-hydrated="true"]', { timeout: 10000 });
  return { page, errors };
}

const currentFolder = (page) => page.getByTestId('current-folder').innerText();

async function openFolder(page, folder) {
  await page.fill('#folder-path', folder);
  await page.press('#folder-path', 'Enter');
  await expect(async () => assert.equal(await currentFolder(page), realpathSync(folder)));
}

test('folder links change the page in place; back, forward and reload follow the address', async () => {
  const [first, second] = [realpathSync(makeFolder()), realpathSync(makeFolder())];
  const { page, errors } = await newPage();
  await openFolder(page, first);
  await openFolder(page, second);
  // A value on `window` survives only while the document does: no reload below.
  await page.evaluate(() => { window.sameDocument = true; });

  await page.locator(`[data-testid="folder-list"] a[title="${first}"]`).click();
  await expect(async () => assert.equal(await currentFolder(page), first));
  assert.equal(new URL(page.url()).searchParams.get('folder'), first);
  assert.equal(await page.evaluate(() => window.sameDocument), true, 'a folder link does not reload the page');

  await page.goBack();
  await expect(async () => assert.equal(await currentFolder(page), second));
  await page.goForward();
  await expect(async () => assert.equal(await currentFolder(page), first));
  assert.equal(await page.evaluate(() => window.sameDocument), true, 'back and forward stay in the page');

  await page.reload();
  await page.waitForSelector('html[data-hydrated="true"]');
  await expect(async () => assert.equal(await currentFolder(page), first));
  assert.equal(await page.evaluate(() => window.sameDocument), undefined);
  assert.deepEqual(errors, []);
});

test('a shared link opens its folder; each page has its title; other paths are not pages', async () => {
  const folder = realpathSync(makeFolder());
  const { page, errors } = await newPage();
  const origin = new URL(setup.hub.url).origin;
  await page.goto(`${origin}/?folder=${encodeURIComponent(folder)}`);
  await page.waitForSelector('html[data-hydrated="true"]');
  await expect(async () => assert.equal(await currentFolder(page), folder));
  assert.equal(await page.title(), 'Agent Hub');

  // A link to another page is a full load of that page.
  await page.getByTestId('all-decisions-link').click();
  await page.waitForURL(`${origin}/decisions`);
  await page.waitForSelector('html[data-hydrated="true"]');
  assert.equal(await page.title(), 'Decisions · Agent Hub');
  const html = await (await page.request.get(`${origin}/decisions`)).text();
  assert.match(html, /<title>Decisions · Agent Hub<\/title>/, 'the server writes the title');

  const missing = await page.request.get(`${origin}/no-such-page`);
  assert.equal(missing.status(), 404);
  assert.deepEqual(errors, []);
});
