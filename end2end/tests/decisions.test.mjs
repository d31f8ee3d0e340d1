// Fewer, faster decisions (issue 27): three cards in two folders approved in
// one step from the inbox, and a folder's approval timeout seen on the card,
// then in the transcript and the Decisions view once the hub answered "no
// decision" itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { expect } from './expect.mjs';
import { makeFolder, snapshot } from '../hub.mjs';
import { hubWithModel } from '../setup.mjs';
import { openChat, sendPrompt } from '../chat-page.mjs';
import { call, text } from '../fake-model.mjs';

const setup = hubWithModel();

async function api(method, path, body) {
  const response = await fetch(`${setup.hub.base}${path}`, {
    method,
    headers: { Authorization: `Bearer ${setup.hub.token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await response.text();
  const json = (response.headers.get('content-type') ?? '').startsWith('application/json');
  return { status: response.status, body: json ? JSON.parse(answer) : answer };
}

/** A prompt through the API, as another tab would send it; answers once the turn pauses. */
async function promptByApi(folder, message) {
  const { status, body } = await api('POST', '/api/chat/prompt', { folderPath: folder, message });
  assert.equal(status, 200);
  const events = body.trim().split('\n').map((line) => JSON.parse(line));
  assert.equal(events.at(-1).status, 'waiting_approval', JSON.stringify(events.at(-1)));
}

async function audit(folder) {
  const { body } = await api('GET', `/api/audit?folderPath=${encodeURIComponent(folder)}`);
  return (typeof body === 'string' ? body : JSON.stringify(body)).trim().split('\n').filter(Boolean).map((line) => JSON.parse(line));
}

test('three cards in two folders are selected in the inbox and approved in one step', async () => {
  const first = makeFolder();
  const second = makeFolder();
  setup.model.script({
    calls: [
      ['a1', 'run_shell_command', { command: 'touch one.txt' }],
      ['a2', 'run_shell_command', { command: 'touch two.txt' }],
    ],
  });
  await promptByApi(first, 'make two files');
  setup.model.script({
    calls: [
      ['b1', 'run_shell_command', { command: 'touch b.txt' }],
      ['b2', 'write_file', { file_path: 'c.txt', content: 'c' }],
    ],
  });
  await promptByApi(second, 'make b, write c');

  const { page, errors } = await openChat(setup.browser, setup.hub, first);
  const rows = page.getByTestId('inbox-call');
  await expect(async () => assert.equal(await rows.count(), 4));
  // Each card's summary is there to read before deciding; an edit is decided on its diff.
  const summaries = await page.getByTestId('inbox-call-summary').allInnerTexts();
  assert.deepEqual(summaries.sort(), ['c.txt', 'touch b.txt', 'touch one.txt', 'touch two.txt']);
  const edit = rows.filter({ hasText: 'c.txt' });
  assert.equal(await edit.getByTestId('inbox-select').count(), 0, 'an edit has no box to tick');
  assert.match(await edit.innerText(), /decide on its card/);
  const approve = page.getByTestId('inbox-approve-selected');
  assert.equal(await approve.isDisabled(), true, 'nothing selected yet');

  // All of the first folder, and the second folder's one call.
  await page.getByTestId('inbox-folder').filter({ hasText: basename(first) }).getByTestId('inbox-folder-select').check();
  await rows.filter({ hasText: 'touch b.txt' }).getByTestId('inbox-select').check();
  await expect(async () => assert.equal(await approve.innerText(), 'Approve selected (3)'));
  await snapshot(page, 'inbox-batch');

  setup.model.script(text('Done.'));
  await approve.click();
  await expect(async () => assert.equal(await page.getByTestId('inbox-outcome').innerText(), '3 approved.'));
  await expect(async () => {
    assert.ok(existsSync(join(first, 'one.txt')) && existsSync(join(first, 'two.txt')), 'both commands ran');
    assert.ok(existsSync(join(second, 'b.txt')), "the second folder's command ran");
  });
  // The second folder's turn goes on to its edit, which still waits on its card.
  await expect(async () => assert.deepEqual(await page.getByTestId('inbox-call-summary').allInnerTexts(), ['c.txt']));
  assert.equal(existsSync(join(second, 'c.txt')), false);
  const decided = [...(await audit(first)), ...(await audit(second))].filter((row) => row.decision === 'approved');
  assert.deepEqual(decided.map((row) => [row.toolId, row.decidedBy]).sort(), [['a1', 'user'], ['a2', 'user'], ['b1', 'user']]);
  assert.deepEqual(errors, []);
  await page.context().close();
});

test('a folder approval timeout counts down on the card, then the hub answers no decision and the turn goes on', async () => {
  const folder = makeFolder();
  const { page, errors } = await openChat(setup.browser, setup.hub, folder);
  const config = await api('POST', '/api/chat/config', { folderPath: folder, approvalTimeoutSecs: 4 });
  assert.equal(config.status, 200);
  assert.equal(config.body.approvalTimeoutSecs, 4);
  await expect(async () => assert.equal(await page.getByTestId('timeout-picker').inputValue(), '4'));

  setup.model.script(call('c1', 'run_shell_command', { command: 'touch never.txt' }), text('Went on without it.'));
  await sendPrompt(page, 'try it');
  const card = page.getByTestId('approval-card');
  await card.waitFor();
  await expect(async () => assert.match(await card.getByTestId('card-countdown').innerText(), /^0:0[0-4] left$/));
  await snapshot(page, 'card-countdown');

  // Nobody decides: the card goes, the call never ran, the model was told and went on.
  await card.waitFor({ state: 'detached', timeout: 15000 });
  await expect(async () => assert.equal(await page.getByTestId('assistant-message').last().innerText(), 'Went on without it.'));
  assert.equal(existsSync(join(folder, 'never.txt')), false);
  const told = setup.model.lastMessages().find((message) => message.role === 'tool');
  assert.match(told.content, /No decision within 4 seconds; the call was not run\./);
  const entry = page.locator('[data-testid=tool-entry][data-tool-id=c1]');
  await entry.locator('summary').click();
  await expect(async () => assert.match(await entry.innerText(), /No decision within 4 seconds/));

  // The Decisions view names it: timed out, by the hub.
  await page.getByTestId('decisions-button').click();
  const row = page.locator('[data-testid=audit-row][data-tool-id=c1]');
  await expect(async () => assert.equal(await row.getAttribute('data-decision'), 'timed_out'));
  assert.match(await row.innerText(), /timed out/);
  await snapshot(page, 'decisions-timed-out');

  await api('POST', '/api/chat/config', { folderPath: folder, approvalTimeoutSecs: null });
  await expect(async () => assert.equal(await page.getByTestId('timeout-picker').inputValue(), ''));
  assert.deepEqual(errors, []);
  await page.context().close();
});
