// Several sessions in one folder, as a user works with them in headless
// Chromium against a real hub and a scripted model: the list, a new session
// from the button and from Alt+N, each session's own transcript, the address
// naming folder and session (reload and back open the same view), Alt+J to the
// next waiting card, rename in place, and delete confirmed while a card waits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { realpathSync } from 'node:fs';
import { expect } from './expect.mjs';
import { makeFolder, snapshot } from '../hub.mjs';
import { openChat, sendPrompt } from '../chat-page.mjs';
import { hubWithModel } from '../setup.mjs';
import { call, text } from '../fake-model.mjs';

const setup = hubWithModel();

const sessionInUrl = (page) => new URL(page.url()).searchParams.get('session');
const rows = (page) => page.getByTestId('session-list').getByTestId('session-open');
const currentRow = (page) => page.getByTestId('session-list').locator('[data-testid="session-open"][aria-current="true"]');
const transcript = (page) => page.getByTestId('chat').innerText();

test('two sessions in one folder keep their own transcripts; the address opens each', async () => {
  const folder = realpathSync(makeFolder());
  setup.model.script(text('First answer.'));
  const { page, errors } = await openChat(setup.browser, setup.hub, folder);
  await sendPrompt(page, 'hello from the first session');
  await expect(async () => assert.match(await transcript(page), /First answer\./));
  await expect(async () => assert.equal(await currentRow(page).innerText().then((t) => t.split('\n')[0]), 'hello from the first session'));
  const first = await page.evaluate(() => window.location.search);

  await page.getByTestId('new-session').click();
  await expect(async () => assert.ok(sessionInUrl(page), 'the new session is named in the address'));
  const second = sessionInUrl(page);
  await expect(async () => assert.equal(await rows(page).count(), 2));
  await expect(async () => assert.doesNotMatch(await transcript(page), /First answer/));

  setup.model.script(text('Second answer.'));
  await sendPrompt(page, 'hello from the second session');
  await expect(async () => assert.match(await transcript(page), /Second answer\./));
  assert.doesNotMatch(await transcript(page), /First answer/);

  // Reload: the same session.
  await page.reload();
  await page.waitForSelector('html[data-hydrated="true"]');
  await expect(async () => assert.match(await transcript(page), /Second answer\./));
  assert.equal(sessionInUrl(page), second);

  // Back to the session before, in the page.
  await page.evaluate(() => { window.sameDocument = true; });
  await rows(page).filter({ hasText: 'hello from the first session' }).click();
  await expect(async () => assert.match(await transcript(page), /First answer\./));
  assert.equal(await page.evaluate(() => window.sameDocument), true);
  await page.goBack();
  await expect(async () => assert.match(await transcript(page), /Second answer\./));
  assert.equal(sessionInUrl(page), second);

  // A shared link in a new tab.
  const other = await (await setup.browser.newContext()).newPage();
  await other.goto(setup.hub.url);
  await other.waitForSelector('html[data-hydrated="true"]');
  await other.goto(`${new URL(setup.hub.url).origin}/${first}`);
  await other.waitForSelector('html[data-hydrated="true"]');
  await expect(async () => assert.match(await other.getByTestId('chat').innerText(), /First answer\./));
  await other.context().close();

  // Alt+N: a third session, opened at once.
  await page.locator('body').press('Alt+n');
  await expect(async () => assert.equal(await rows(page).count(), 3));
  await expect(async () => assert.notEqual(sessionInUrl(page), second));
  assert.deepEqual(errors, []);
});

test('Alt+J opens the next waiting card; a waiting session is deleted only when confirmed; rename in place', async () => {
  const folder = realpathSync(makeFolder());
  setup.model.script(call('w1', 'run_shell_command', { command: 'echo one' }));
  const { page, errors } = await openChat(setup.browser, setup.hub, folder);
  await sendPrompt(page, 'first waits');
  await page.getByTestId('approval-card').waitFor();

  await page.getByTestId('new-session').click();
  await expect(async () => assert.equal(await rows(page).count(), 2));
  await expect(async () => assert.equal(await page.getByTestId('approval-card').count(), 0));
  const idle = sessionInUrl(page);
  assert.ok(idle);

  // Alt+J: to the session whose card waits, which takes the focus.
  await page.locator('body').press('Alt+j');
  await page.getByTestId('approval-card').waitFor();
  await expect(async () => assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'approval-card'));
  assert.notEqual(sessionInUrl(page), idle);

  // Rename: Escape keeps the old title, Enter saves.
  const waitingId = await page.getByTestId('session-row').filter({ has: page.locator('[aria-current="true"]') }).getAttribute('data-session-id');
  const row = page.locator(`[data-testid="session-row"][data-session-id="${waitingId}"]`);
  await row.getByTestId('session-rename').click();
  const input = row.getByTestId('session-title-input');
  await expect(async () => assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'session-title-input'));
  await input.fill('not this');
  await input.press('Escape');
  await expect(async () => assert.match(await row.innerText(), /first waits/));
  await row.getByTestId('session-rename').click();
  await input.fill('The waiting one');
  await input.press('Enter');
  await expect(async () => assert.match(await row.innerText(), /The waiting one/));

  // Delete while its card waits: the page asks first and says why.
  await row.getByTestId('session-delete').click();
  const confirm = page.getByTestId('session-delete-confirm');
  await confirm.waitFor();
  assert.match(await confirm.innerText(), /wait/i);
  await snapshot(page, 'sessions-delete-confirm');
  await page.getByTestId('session-delete-keep').click();
  assert.equal(await rows(page).count(), 2);
  await row.getByTestId('session-delete').click();
  await page.getByTestId('session-delete-force').click();
  await expect(async () => assert.equal(await rows(page).count(), 1));
  // The deleted session was the open one: the one left opens.
  await expect(async () => assert.equal(sessionInUrl(page), idle));

  // A deleted session is not made anew by going back to its address.
  await page.locator('body').press('Alt+n');
  await expect(async () => assert.equal(await rows(page).count(), 2));
  await expect(async () => assert.notEqual(sessionInUrl(page), idle));
  const gone = sessionInUrl(page);
  await page.locator(`[data-testid="session-row"][data-session-id="${idle}"]`).getByTestId('session-open').click();
  await expect(async () => assert.equal(sessionInUrl(page), idle));
  await page.locator(`[data-testid="session-row"][data-session-id="${gone}"]`).getByTestId('session-delete').click();
  await expect(async () => assert.equal(await rows(page).count(), 1));
  await page.goBack();
  await expect(async () => assert.equal(sessionInUrl(page), null, 'the address falls back to the folder'));
  await page.getByTestId('chat').waitFor();
  assert.equal(await page.locator(`[data-testid="session-row"][data-session-id="${gone}"]`).count(), 0);
  const listed = await (await page.request.get(`${new URL(setup.hub.url).origin}/api/projects`)).json();
  const ids = listed.projects.flatMap((project) => project.sessions.map((session) => session.id));
  assert.ok(!ids.includes(gone), 'the hub did not make the deleted session anew');
  assert.deepEqual(errors, []);
});
