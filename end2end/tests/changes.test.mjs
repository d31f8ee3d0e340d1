// The Changes panel in real headless Chromium against a real hub and a
// scripted model: open while the edit waits, it lists the file as soon as the
// edit is approved (no reload, no refresh), with its badge and line counts,
// and opens to the diff; the folder being a git repository, the working tree
// against HEAD is listed too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { makeFolder, snapshot } from '../hub.mjs';
import { openChat, sendPrompt } from '../chat-page.mjs';
import { hubWithModel } from '../setup.mjs';
import { call, text } from '../fake-model.mjs';

const setup = hubWithModel();

test('after an approved edit the Changes panel lists the file and shows its diff', async () => {
  const folder = makeFolder();
  writeFileSync(join(folder, 'poem.txt'), 'roses are red\nviolets are blue\n');
  const git = (...args) => execFileSync('git', ['-C', folder, '-c', 'user.name=Test', '-c', 'user.email=t@example.com',
    '-c', 'init.defaultBranch=main', ...args]);
  git('init', '-q');
  git('add', '.');
  git('commit', '-q', '-m', 'first');
  setup.model.script(
    call('e1', 'replace', { file_path: 'poem.txt', old_string: 'blue', new_string: 'purple' }),
    text('Done.'),
  );
  const { page, errors } = await openChat(setup.browser, setup.hub, folder);
  await sendPrompt(page, 'make the violets purple');
  await page.getByTestId('approval-card').waitFor();

  const button = page.getByTestId('changes-button');
  await button.click();
  assert.equal(await button.getAttribute('aria-expanded'), 'true');
  const panel = page.getByTestId('changes-panel');
  await panel.getByTestId('changes-empty').waitFor();

  await page.getByTestId('card-approve').click();
  const row = panel.getByTestId('changes-files').locator('[data-testid="change-row"][data-path="poem.txt"]');
  await row.waitFor();
  assert.equal(await row.getByTestId('change-kind').innerText(), 'modified');
  assert.equal(await row.getByTestId('change-stats').innerText(), '+1 −1');
  const toggle = row.getByTestId('change-toggle');
  assert.equal(await toggle.getAttribute('aria-label'), 'poem.txt, modified, 1 line added, 1 line removed');
  assert.equal(await toggle.getAttribute('aria-expanded'), 'false');

  await toggle.click();
  assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
  const diff = row.getByTestId('diff');
  await diff.waitFor();
  assert.equal(await diff.getByTestId('diff-removed').innerText(), '2\t\t-\tviolets are blue');
  assert.equal(await diff.getByTestId('diff-added').innerText(), '\t2\t+\tviolets are purple');
  const tree = panel.getByTestId('changes-git');
  assert.match(await tree.innerText(), /Working tree \(git, main\) against HEAD/i);
  const treeRow = tree.locator('[data-testid="change-row"][data-path="poem.txt"]');
  assert.equal(await treeRow.getByTestId('change-kind').innerText(), 'modified');
  assert.equal(await treeRow.getByTestId('change-stats').innerText(), '+1 −1');
  await snapshot(page, 'changes-panel');

  await panel.press('Escape');
  await panel.waitFor({ state: 'detached' });
  await expect(async () => assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'changes-button'));
  assert.deepEqual(errors, []);
});
