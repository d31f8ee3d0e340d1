// Rewind in real headless Chromium against a real hub and a scripted model
// (issue 28): a turn whose shell command changed files gets "Rewind to before
// this turn" under its prompt, which shows the turn's files and diff first; a
// file changed since by someone else is listed and kept until Force, and the
// folder is then as it was before the turn.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { makeFolder, snapshot } from '../hub.mjs';
import { openChat, sendPrompt } from '../chat-page.mjs';
import { hubWithModel } from '../setup.mjs';
import { violations } from '../axe.mjs';
import { call, text } from '../fake-model.mjs';

const setup = hubWithModel();
test('a turn that changed files is rewound from its prompt, conflicts listed first, then forced', async () => {
  const folder = makeFolder();
  writeFileSync(join(folder, 'notes.txt'), 'one\ntwo\n');
  setup.model.script(
    call('s1', 'run_shell_command', { command: "sed -i 's/two/TWO/' notes.txt && echo new > new.txt" }),
    text('Done.'),
  );
  const { page, errors } = await openChat(setup.browser, setup.hub, folder);
  await sendPrompt(page, 'edit the notes');
  await page.getByTestId('card-approve').click();
  await page.getByTestId('assistant-message').filter({ hasText: 'Done.' }).waitFor();
  assert.equal(readFileSync(join(folder, 'notes.txt'), 'utf8'), 'one\nTWO\n');

  const button = page.getByTestId('rewind-button');
  await button.waitFor();
  await button.click();
  const panel = page.getByTestId('rewind-panel');
  const files = panel.getByTestId('rewind-file');
  await files.first().waitFor();
  assert.deepEqual((await files.allInnerTexts()).sort(), ['added new.txt', 'modified notes.txt']);
  assert.deepEqual(await files.evaluateAll((rows) => rows.map((row) => [row.dataset.path, row.dataset.change]).sort()),
    [['new.txt', 'added'], ['notes.txt', 'modified']]);
  await panel.getByTestId('rewind-diff').waitFor();
  assert.match(await panel.getByTestId('rewind-diff').innerText(), /-two\n\+TWO/);

  // Someone else edits a file the turn changed: the rewind lists it and changes nothing.
  writeFileSync(join(folder, 'notes.txt'), 'mine\n');
  await panel.getByTestId('rewind-confirm').click();
  await panel.getByTestId('rewind-conflicts').waitFor();
  assert.deepEqual(await panel.getByTestId('rewind-conflict').allInnerTexts(), ['notes.txt']);
  await snapshot(page, 'rewind-conflicts');
  assert.equal(readFileSync(join(folder, 'notes.txt'), 'utf8'), 'mine\n');
  assert.ok(existsSync(join(folder, 'new.txt')));
  assert.deepEqual(await violations(page, '[data-testid="rewind-panel"]'), [], 'the panel with its conflicts');

  await panel.getByTestId('rewind-force').click();
  await panel.getByTestId('rewind-done').waitFor();
  assert.match(await panel.getByTestId('rewind-done').innerText(), /forgot the rewound turns/);
  assert.equal(readFileSync(join(folder, 'notes.txt'), 'utf8'), 'one\ntwo\n');
  assert.ok(!existsSync(join(folder, 'new.txt')));

  // Undo: the folder as it was before the rewind, the other person's edit included.
  await panel.getByTestId('rewind-undo').click();
  await expect(async () => assert.equal(readFileSync(join(folder, 'notes.txt'), 'utf8'), 'mine\n'));
  assert.equal(readFileSync(join(folder, 'new.txt'), 'utf8'), 'new\n');
  assert.deepEqual(errors, []);
});
