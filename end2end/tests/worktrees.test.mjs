// Isolated sessions in real headless Chromium against a real hub and a
// scripted model (issue 29): in a git folder the New session control offers
// "Isolated"; two isolated sessions change the same file differently, each in
// its own worktree (the folder untouched); the second one's Apply brings its
// change into the folder, and the first one's Apply then reports its conflict
// and changes nothing. A folder without git offers no "Isolated".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { makeFolder, snapshot } from '../hub.mjs';
import { openChat, sendPrompt } from '../chat-page.mjs';
import { hubWithModel } from '../setup.mjs';
import { violations } from '../axe.mjs';
import { call, text } from '../fake-model.mjs';

const setup = hubWithModel();
const sessionInUrl = (page) => new URL(page.url()).searchParams.get('session');

/** Makes an isolated session from the page and has its agent run `command` (approved on its card). */
async function isolatedTurn(page, command, answer, previousAnswer) {
  const before = sessionInUrl(page);
  await page.getByTestId('new-session-isolated').check();
  await page.getByTestId('new-session').click();
  await expect(async () => assert.ok(sessionInUrl(page) && sessionInUrl(page) !== before, 'the new session is open'));
  const id = sessionInUrl(page);
  // The new session's chat is the one shown before anything is sent to it.
  if (previousAnswer) {
    await expect(async () => assert.doesNotMatch(await page.getByTestId('chat').innerText(), new RegExp(previousAnswer)));
  }
  const row = page.locator(`[data-testid="session-row"][data-session-id="${id}"]`);
  await expect(async () => assert.match(await row.getByTestId('session-branch').innerText(), /^agent-hub\/session-[0-9a-f]{8}$/));
  setup.model.script(call(`c-${id}`, 'run_shell_command', { command }), text(answer));
  await sendPrompt(page, `please: ${command}`);
  await page.getByTestId('card-approve').click();
  await page.getByTestId('assistant-message').filter({ hasText: answer }).waitFor();
  return { id, row };
}

test('two isolated sessions change one file; one is applied, the other reports its conflict', async () => {
  const folder = makeFolder();
  writeFileSync(join(folder, 'notes.txt'), 'one\ntwo\nthree\n');
  const git = (...args) => execFileSync('git', ['-C', folder, '-c', 'user.name=Test', '-c', 'user.email=t@example.com',
    '-c', 'init.defaultBranch=main', ...args]).toString();
  git('init', '-q');
  git('add', '.');
  git('commit', '-q', '-m', 'first');
  const notes = () => readFileSync(join(folder, 'notes.txt'), 'utf8');

  const { page, errors } = await openChat(setup.browser, setup.hub, folder);
  await page.getByTestId('new-session-isolated').waitFor();
  // The folder's own session answers once, so a new session's chat is told apart from it.
  setup.model.script(text('Hello there.'));
  await sendPrompt(page, 'hello');
  await page.getByTestId('assistant-message').filter({ hasText: 'Hello there.' }).waitFor();
  const first = await isolatedTurn(page, "sed -i 's/two/FIRST/' notes.txt", 'First done.', 'Hello there.');
  const second = await isolatedTurn(page, "sed -i 's/two/SECOND/' notes.txt", 'Second done.', 'First done.');
  assert.equal(notes(), 'one\ntwo\nthree\n', 'both worked in their worktrees, not in the folder');
  assert.match(git('branch', '--list', 'agent-hub/*'), /agent-hub\/session-.*\n.*agent-hub\/session-/s);

  // The second session (open now) is applied from its Changes panel.
  await page.getByTestId('changes-button').click();
  const panel = page.getByTestId('changes-panel');
  const worktree = panel.getByTestId('worktree');
  await expect(async () => assert.deepEqual(
    await worktree.getByTestId('worktree-files').locator('li').allInnerTexts(), ['modified notes.txt']));
  await worktree.getByTestId('worktree-apply').click();
  await expect(async () => assert.equal(await worktree.getByTestId('worktree-done').innerText(), 'Applied to the folder: notes.txt.'));
  assert.equal(notes(), 'one\nSECOND\nthree\n');
  assert.equal(git('status', '--porcelain'), ' M notes.txt\n', 'in the working tree only, not staged');

  // The first one's Apply: a conflict named, the folder as it was.
  await panel.press('Escape');
  await panel.waitFor({ state: 'detached' });
  await first.row.getByTestId('session-open').click();
  await expect(async () => assert.equal(sessionInUrl(page), first.id));
  await expect(async () => assert.match(await page.getByTestId('chat').innerText(), /First done\./));
  await page.getByTestId('changes-button').click();
  const firstTree = page.getByTestId('changes-panel').getByTestId('worktree');
  await expect(async () => assert.match(await firstTree.innerText(), /modified notes\.txt/));
  await firstTree.getByTestId('worktree-apply').click();
  const refused = firstTree.getByTestId('worktree-refused');
  await refused.waitFor();
  assert.match(await refused.innerText(), /the folder changed these files too: notes\.txt/);
  await snapshot(page, 'worktree-conflict');
  assert.deepEqual(await violations(page, '[data-testid="worktree"]'), [], 'the worktree actions with a refusal');
  assert.deepEqual(await violations(page, '[data-testid="session-list"]'), [], 'the session list with Isolated');
  assert.equal(notes(), 'one\nSECOND\nthree\n', 'nothing changed');
  assert.ok(second.id !== first.id);
  assert.deepEqual(errors, []);
});

test('a folder that is not a git repository offers no isolated session', async () => {
  const folder = makeFolder();
  const { page, errors } = await openChat(setup.browser, setup.hub, folder);
  await page.getByTestId('new-session').waitFor();
  const answer = await setup.hub.api(`/api/folders/git?folderPath=${encodeURIComponent(folder)}`);
  assert.deepEqual(answer.body, { isolatable: false });
  assert.equal(await page.getByTestId('new-session-isolated').count(), 0);
  assert.deepEqual(errors, []);
});
