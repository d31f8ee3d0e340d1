// A hub page with a folder's chat open, as the chat tests start from.
import assert from 'node:assert/strict';
import { realpathSync } from 'node:fs';
import { expect } from './tests/expect.mjs';

/** Opens the hub in a fresh context and the folder's chat in it; `errors` collects page errors and dialogs. */
export async function openChat(browser, hub, folder) {
  const page = await (await browser.newContext()).newPage();
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

export async function sendPrompt(page, message) {
  await page.fill('#prompt-input', message);
  await page.press('#prompt-input', 'Enter');
}
