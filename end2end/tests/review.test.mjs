// Reviewing a file edit and answering the agent's questions, in real headless
// Chromium against a real hub and a scripted model: the edit card shows the
// diff, e opens the editor, the saved text is what lands on disk; a choice
// question is answered with the keyboard, a text question by typing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { makeFolder, snapshot } from '../hub.mjs';
import { openChat, sendPrompt } from '../chat-page.mjs';
import { hubWithModel } from '../setup.mjs';
import { call, text } from '../fake-model.mjs';

const setup = hubWithModel();

const openFolder = (folder) => openChat(setup.browser, setup.hub, folder);

async function focused(page, testid) {
  await expect(async () => assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), testid));
}

test('an edit card shows the diff; e, a change and save write the user\'s text', async () => {
  const folder = makeFolder();
  const original = Array.from({ length: 40 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
  writeFileSync(join(folder, 'notes.txt'), original);
  setup.model.script(
    call('e1', 'replace', { file_path: 'notes.txt', old_string: 'line 20\n', new_string: 'line twenty\n' }),
    text('Applied.'),
  );
  const { page, errors } = await openFolder(folder);
  await sendPrompt(page, 'rename line 20');

  const card = page.getByTestId('approval-card');
  await card.waitFor();
  assert.equal(await card.getByTestId('diff-path').innerText(), 'notes.txt');
  assert.equal(await card.getByTestId('diff-stats').innerText(), '+1 −1');
  assert.equal(await card.getByTestId('diff-removed').innerText(), '20\t\t-\tline 20');
  assert.equal(await card.getByTestId('diff-added').innerText(), '\t20\t+\tline twenty');
  const folds = await card.getByTestId('diff-fold').allInnerTexts();
  assert.deepEqual(folds, ['⋯ 16 unchanged lines', '⋯ 17 unchanged lines']);
  assert.match(await page.getByTestId('card-hint').innerText(), /Enter Apply • a Always • t For this turn • d Reject • e Edit/);
  await snapshot(page, 'edit-card');

  await focused(page, 'approval-card');
  await page.keyboard.press('e');
  const editor = page.getByTestId('card-editor');
  await focused(page, 'card-editor');
  assert.equal(await editor.inputValue(), original.replace('line 20\n', 'line twenty\n'), 'the proposal, whole');
  const mine = original.replace('line 20\n', 'line 20 (kept, says the user)\n');
  await editor.fill(mine);
  await snapshot(page, 'edit-editor');
  await page.keyboard.press('Control+Enter');

  await card.waitFor({ state: 'detached' });
  await expect(async () => assert.equal(readFileSync(join(folder, 'notes.txt'), 'utf8'), mine));
  const entry = page.locator('[data-testid="tool-entry"][data-tool-id="e1"]');
  await expect(async () => assert.equal(await entry.getAttribute('data-state'), 'success'));
  await entry.locator('summary').click();
  assert.match(await entry.getByTestId('diff').innerText(), /your version/);
  assert.match(await entry.getByTestId('diff-added').innerText(), /line 20 \(kept, says the user\)/);
  assert.match(await entry.getByTestId('tool-output').innerText(), /user modified your suggested changes/);
  const told = setup.model.lastMessages().find((message) => message.role === 'tool');
  assert.match(told.content, /^Successfully applied user-modified edit to notes.txt/);
  assert.deepEqual(errors, []);
});

test('a choice question is answered with the arrow keys and Enter; a text question by typing', async () => {
  const folder = makeFolder();
  setup.model.script(
    call('q1', 'ask_user', { prompt: 'Which license?', input_type: 'choice', choices: ['MIT', 'Apache-2.0', 'GPL-3.0'] }),
    call('q2', 'ask_user', { prompt: 'Who holds the copyright?', input_type: 'text' }),
    text('Licensed.'),
  );
  const { page, errors } = await openFolder(folder);
  await sendPrompt(page, 'add a license');

  const card = page.getByTestId('question-card');
  await card.waitFor();
  assert.equal(await card.getByTestId('question-prompt').innerText(), 'Which license?');
  const choices = card.getByTestId('question-choice');
  const compact = (texts) => texts.map((t) => t.replace(/\s+/g, ''));
  assert.deepEqual(compact(await choices.allInnerTexts()), ['▸1)MIT', '2)Apache-2.0', '3)GPL-3.0'], 'the first is highlighted');
  await focused(page, 'question-card');
  await page.keyboard.press('ArrowDown');
  await expect(async () => assert.match(await choices.nth(1).innerText(), /^▸/));
  await snapshot(page, 'question-choice');
  await page.keyboard.press('Enter');

  // The next question follows in the same turn; its input takes the focus.
  await expect(async () => assert.equal(await card.getAttribute('data-request-id'), 'q2'));
  await focused(page, 'question-text');
  await page.keyboard.press('Enter'); // blank: nothing is sent
  assert.equal(await card.getAttribute('data-request-id'), 'q2');
  await page.keyboard.type('Ada Lovelace');
  await page.keyboard.press('Enter');

  await card.waitFor({ state: 'detached' });
  await expect(async () => assert.match(await page.getByTestId('assistant-message').last().innerText(), /Licensed\./));
  const answers = await page.getByTestId('question-answer').allInnerTexts();
  assert.deepEqual(answers, ['The user chose option 2 of 3: Apache-2.0', 'The user answered: Ada Lovelace']);
  const results = setup.model.lastMessages().filter((message) => message.role === 'tool').map((message) => message.content);
  assert.deepEqual(results, answers);
  assert.deepEqual(errors, []);
});

test('r rejects a question: the turn ends and the page says so', async () => {
  const folder = makeFolder();
  setup.model.script(call('q3', 'ask_user', { prompt: 'Force-push?', input_type: 'approval', choices: ['Push', 'Stop'] }));
  const { page, errors } = await openFolder(folder);
  await sendPrompt(page, 'publish');
  const card = page.getByTestId('question-card');
  await card.waitFor();
  assert.equal(await card.getByTestId('question-approve').innerText(), 'aPush');
  await focused(page, 'question-card');
  await page.keyboard.press('r');
  await card.waitFor({ state: 'detached' });
  await expect(async () => assert.match(await page.getByTestId('notice').last().innerText(), /cancelled/));
  assert.equal(await page.getByTestId('question-answer').innerText(), 'Rejected.');
  assert.deepEqual(errors, []);
});
