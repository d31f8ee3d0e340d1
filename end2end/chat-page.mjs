// A hub page with a folder's chat open, as the chat tests start from.
import assert from 'node:assert/strict';
import { realpathSync } from 'node:fs';
import { expect } from './tests/expect.mjs';

/**
 * Opens the hub in a fresh context (or in `context`) and the folder's chat in
 * it; `errors` collects page errors and dialogs.
 */
export async function openChat(browser, hub, folder, { context } = {}) {
  const page = await (context ?? (await browser.newContext())).newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('dialog', (dialog) => errors.push(`unexpected dialog: ${dialog.message()}`));
  await page.goto(hub.url);
  await page.waitForSelector('html[data-hydrated="true"]', { timeout: 10000 });
  await page.fill('#folder-path', folder);
  await page.press('#folder-path', 'Enter');
  await expect(async () => assert.equal(await page.getByTestId('current-folder').innerText(), realpathSync(folder)));
  await page.getByTestId('chat').waitFor();
  return { page, errors };
}

/**
 * Sends `message` from the prompt box, as a user would: once the box takes it.
 * While any stream of the chat is open (a turn's own stream runs until its
 * `result`, a moment after its last answer shows; the log is followed on open
 * and on every change the hub reports) Send is disabled and Enter does
 * nothing, the text staying in the box. So this presses Enter when Send is
 * enabled, until the box has taken the message: it empties (and Enter on an
 * empty box sends nothing, so a message never goes twice).
 */
export async function sendPrompt(page, message, { timeout = 30000 } = {}) {
  const input = page.locator('#prompt-input');
  const send = page.getByTestId('prompt-form').locator('button[type=submit]');
  await input.fill(message);
  await expect(async () => {
    if ((await input.inputValue()) === '') return;
    assert.ok(await send.isEnabled(), `the chat is busy: '${message}' waits in the prompt box`);
    await input.press('Enter');
    assert.equal(await input.inputValue(), '', `the prompt box did not take '${message}'`);
  }, { timeout });
}
