// The approval loop as a user meets it, in real headless Chromium against a real
// hub whose built-in agent talks to a scripted model: prompt → Action Required
// card → decide with the keyboard; feedback makes the model regenerate; YOLO
// runs without a card.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { makeFolder, snapshot } from '../hub.mjs';
import { openChat, sendPrompt } from '../chat-page.mjs';
import { hubWithModel } from '../setup.mjs';
import { call, text } from '../fake-model.mjs';

const setup = hubWithModel();

const openFolder = (folder) => openChat(setup.browser, setup.hub, folder);

const card = (page) => page.getByTestId('approval-card');

/** The card takes the keyboard focus when it appears; keys before that go elsewhere. */
async function cardHasFocus(page) {
  await expect(async () => assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'approval-card'));
}

test('a shell call waits on a card; key 1 runs it and the result shows', async () => {
  const folder = makeFolder();
  setup.model.script(
    call('c1', 'run_shell_command', { command: 'echo hello > out.txt && echo made-it', description: 'make a file' }),
    text('Done: **created** `out.txt`. ', '<img src=x onerror="alert(1)"><script>alert(2)</script>'),
  );
  const { page, errors } = await openFolder(folder);
  await sendPrompt(page, 'make a file');

  await card(page).waitFor();
  assert.equal(await page.getByTestId('card-tool').innerText(), 'run_shell_command');
  assert.equal(await page.getByTestId('card-position').innerText(), '1/1');
  assert.match(await card(page).innerText(), /command:\s*echo hello > out.txt && echo made-it/);
  assert.match(await page.getByTestId('card-hint').innerText(), /1\/2\/3 Quick Select • t For this turn • n With network • 4 Edit • Tab\/←→ Navigate/);
  assert.equal(existsSync(join(folder, 'out.txt')), false, 'nothing runs before the decision');
  await snapshot(page, 'card');

  await cardHasFocus(page);
  await page.keyboard.press('1');
  await card(page).waitFor({ state: 'detached' });
  const entry = page.locator('[data-testid="tool-entry"][data-tool-id="c1"]');
  await expect(async () => assert.equal(await entry.getAttribute('data-state'), 'success'));
  await entry.locator('summary').click();
  assert.match(await entry.getByTestId('tool-output').innerText(), /made-it\s+Exit code: 0/);
  assert.equal(readFileSync(join(folder, 'out.txt'), 'utf8'), 'hello\n');

  // Markdown renders; HTML from the model is shown as text, never run.
  const answer = page.getByTestId('assistant-message').last();
  await expect(async () => assert.match(await answer.innerText(), /<script>alert\(2\)<\/script>/));
  assert.equal(await answer.locator('strong').innerText(), 'created');
  assert.equal(await answer.locator('img, script').count(), 0);
  await snapshot(page, 'after-approve');
  assert.deepEqual(errors, []);
});

test('key 4, an instruction and Enter skip the call; the regenerated call gets a fresh card', async () => {
  const folder = makeFolder();
  mkdirSync(join(folder, 'cache'));
  setup.model.script(
    call('d1', 'run_shell_command', { command: 'rm -rf cache' }),
    call('d2', 'run_shell_command', { command: 'rm -f cache/*.log' }),
  );
  const { page, errors } = await openFolder(folder);
  await sendPrompt(page, 'clean the cache');
  await expect(async () => assert.equal(await card(page).getAttribute('data-tool-id'), 'd1'));
  await cardHasFocus(page);

  await page.keyboard.press('4');
  await expect(async () => assert.equal(await page.getByTestId('card-hint').innerText(), 'Enter Submit • Esc Cancel'));
  await page.keyboard.press('Enter'); // empty input is ignored
  assert.equal(await card(page).getAttribute('data-tool-id'), 'd1');
  await page.keyboard.type('only delete .log files');
  await page.keyboard.press('Enter');

  await expect(async () => assert.equal(await card(page).getAttribute('data-tool-id'), 'd2'));
  assert.match(await card(page).innerText(), /rm -f cache\/\*\.log/);
  assert.equal(await page.getByTestId('card-feedback').inputValue(), '', 'the new card starts fresh');
  assert.match(await page.getByTestId('card-hint').innerText(), /Quick Select/);
  assert.equal(await page.locator('[data-tool-id="d1"][data-testid="tool-entry"]').getAttribute('data-state'), 'skipped');
  assert.ok(existsSync(join(folder, 'cache')), 'the redirected call never ran');
  const feedback = setup.model.lastMessages().find((message) => message.role === 'tool');
  assert.equal(feedback.content, '[USER FEEDBACK - Tool was not executed]: only delete .log files');

  // Arrow keys move the ❯; Enter on "No" rejects and ends the turn.
  await cardHasFocus(page);
  await page.keyboard.press('ArrowRight');
  await expect(async () => assert.match(await page.getByTestId('card-reject').innerText(), /^❯/));
  await page.keyboard.press('Enter');
  await card(page).waitFor({ state: 'detached' });
  await expect(async () => assert.match(await page.getByTestId('notice').last().innerText(), /cancelled/));
  assert.ok(existsSync(join(folder, 'cache')));
  assert.deepEqual(errors, []);
});

test('a card survives a reload and can be decided after it', async () => {
  const folder = makeFolder();
  setup.model.script(call('r1', 'write_file', { file_path: 'notes.md', content: '# Notes\n' }), text('Saved.'));
  const { page } = await openFolder(folder);
  await sendPrompt(page, 'write notes');
  await card(page).waitFor();
  await page.reload();
  await page.waitForSelector('html[data-hydrated="true"]');
  await expect(async () => assert.equal(await card(page).getAttribute('data-tool-id'), 'r1'));
  await page.getByTestId('card-approve').click();
  await expect(async () => assert.equal(await page.getByTestId('assistant-message').last().innerText(), 'Saved.'));
  assert.equal(readFileSync(join(folder, 'notes.md'), 'utf8'), '# Notes\n');
});

test('with YOLO on the agent works without a card', async () => {
  const folder = makeFolder({ security: { disableYoloMode: false } });
  await setup.hub.trust(folder); // a folder's own file may turn YOLO on once it is trusted
  setup.model.script(call('y1', 'write_file', { file_path: 'yolo.txt', content: 'no questions' }), text('Wrote it.'));
  const { page, errors } = await openFolder(folder);
  assert.equal(await page.getByTestId('yolo-switch').getAttribute('aria-checked'), 'true');
  await sendPrompt(page, 'write it');
  await expect(async () => assert.equal(await page.getByTestId('assistant-message').last().innerText(), 'Wrote it.'));
  assert.equal(await card(page).count(), 0);
  assert.equal(await page.locator('[data-tool-id="y1"][data-testid="tool-entry"]').getAttribute('data-state'), 'success');
  assert.equal(readFileSync(join(folder, 'yolo.txt'), 'utf8'), 'no questions');
  assert.deepEqual(errors, []);
});
