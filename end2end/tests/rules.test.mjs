// Rules as a user meets them, in real headless Chromium with the built-in
// agent and a scripted model: "Always in this folder" from a card (the prefix
// edited first), the saved rule in the Rules panel, the next call running
// without a card, the rule deleted, and the call after that asking again; the
// decisions read back in the Decisions view.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { makeFolder, snapshot } from '../hub.mjs';
import { openChat, sendPrompt } from '../chat-page.mjs';
import { hubWithModel } from '../setup.mjs';
import { call, text } from '../fake-model.mjs';

const setup = hubWithModel();

const shell = (id, command) => call(id, 'run_shell_command', { command });

test('save "always" from a card, see it in Rules, delete it, and the next call asks again', async () => {
  const folder = makeFolder();
  const { page, errors } = await openChat(setup.browser, setup.hub, folder);
  const card = page.getByTestId('approval-card');

  setup.model.script(shell('r1', 'touch first.txt'), text('Wrote first.'));
  await sendPrompt(page, 'first');
  await card.waitFor({ timeout: 30000 });
  await expect(async () => assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'approval-card'));
  await page.keyboard.press('5');
  const prefix = page.getByTestId('card-prefix-input');
  await prefix.waitFor();
  await expect(async () => assert.equal(await prefix.inputValue(), 'touch'), { timeout: 10000 });
  await prefix.fill('touch ');  // edited: a trailing space is trimmed
  await snapshot(page, 'rules-always-step');
  await page.getByTestId('card-prefix-save').click();
  await card.waitFor({ state: 'detached' });
  await expect(async () => assert.match(await page.getByTestId('assistant-message').last().innerText(), /Wrote first\./),
    { timeout: 30000 });
  assert.ok(existsSync(join(folder, 'first.txt')));

  // The rule shows in the panel, with where it lives.
  await page.getByTestId('rules-button').click();
  const panel = page.getByTestId('rules-panel');
  await panel.waitFor();
  const saved = panel.getByTestId('rule-row').filter({ has: page.getByTestId('rule-delete') });
  await expect(async () => assert.equal(await saved.count(), 1));
  assert.match(await saved.innerText(), /touch/);
  assert.match(await saved.innerText(), /saved in the hub/);
  assert.ok(await panel.getByTestId('rule-row').count() > 1, 'the guard rails are listed too');
  await snapshot(page, 'rules-panel');
  await page.getByTestId('rules-close').click();

  // The next touch runs without a card.
  setup.model.script(shell('r2', 'touch second.txt'), text('Wrote second.'));
  await sendPrompt(page, 'second');
  await expect(async () => assert.match(await page.getByTestId('assistant-message').last().innerText(), /Wrote second\./),
    { timeout: 30000 });
  assert.equal(await card.count(), 0, 'no card: the saved rule allowed it');
  assert.ok(existsSync(join(folder, 'second.txt')));
  await expect(async () => assert.match(await page.getByTestId('tool-policy').last().innerText(), /allowed/i));

  // Deleted, it asks again.
  await page.getByTestId('rules-button').click();
  await panel.waitFor();
  await panel.getByTestId('rule-delete').click();
  await expect(async () => assert.equal(await panel.getByTestId('rule-delete').count(), 0));
  await page.getByTestId('rules-close').click();
  setup.model.script(shell('r3', 'touch third.txt'), text('Wrote third.'));
  await sendPrompt(page, 'third');
  await card.waitFor({ timeout: 30000 });
  assert.equal(existsSync(join(folder, 'third.txt')), false, 'nothing ran before the decision');

  // Every decision is in the trail.
  await page.getByTestId('decisions-button').click();
  const view = page.getByTestId('decisions-view');
  await view.waitFor();
  await expect(async () => assert.equal(await view.getByTestId('audit-row').count(), 2));
  const trail = await view.innerText();
  assert.match(trail, /touch first\.txt/);
  assert.match(trail, /touch second\.txt/);
  await snapshot(page, 'rules-decisions');
  assert.deepEqual(errors, []);
});

test('after three approvals of `ls …` the fourth card offers "Always" for `ls`, filled in and editable', async () => {
  const folder = makeFolder();
  const { page, errors } = await openChat(setup.browser, setup.hub, folder);
  const card = page.getByTestId('approval-card');
  const habit = page.getByTestId('card-habit');

  for (const [id, command] of [['l1', 'ls -a'], ['l2', 'ls -l'], ['l3', 'ls -la']]) {
    setup.model.script(shell(id, command), text(`Listed ${id}.`));
    await sendPrompt(page, `list ${id}`);
    await card.waitFor({ timeout: 30000 });
    if (id === 'l3') {
      // Two approvals so far: the hub answers, and the card offers nothing yet.
      await page.waitForTimeout(1500);
      assert.equal(await habit.count(), 0, 'no offer before three approvals');
    }
    await page.getByTestId('card-approve').click();
    await card.waitFor({ state: 'detached' });
    await expect(async () => assert.match(await page.getByTestId('assistant-message').last().innerText(),
      new RegExp(`Listed ${id}\\.`)), { timeout: 30000 });
  }

  setup.model.script(shell('l4', 'ls -1'), text('Listed l4.'));
  await sendPrompt(page, 'list l4');
  await card.waitFor({ timeout: 30000 });
  await habit.waitFor({ timeout: 10000 });
  assert.equal(await page.getByTestId('card-habit-what').innerText(), 'ls');
  assert.match(await habit.innerText(), /You approved ls 3 times here — Always allow it in this folder\?/);
  await snapshot(page, 'rules-habit-offer');
  await page.getByTestId('card-habit-open').click();
  const prefix = page.getByTestId('card-prefix-input');
  await prefix.waitFor();
  await expect(async () => assert.equal(await prefix.inputValue(), 'ls'), { timeout: 10000 });
  assert.equal(await habit.isVisible(), false, 'the line hides while the step is open');
  await prefix.fill('ls -1');  // still editable
  await page.getByTestId('card-prefix-save').click();
  await card.waitFor({ state: 'detached' });
  await expect(async () => assert.match(await page.getByTestId('assistant-message').last().innerText(), /Listed l4\./),
    { timeout: 30000 });

  // The rule saved is the edited one.
  await page.getByTestId('rules-button').click();
  const saved = page.getByTestId('rules-panel').getByTestId('rule-row').filter({ has: page.getByTestId('rule-delete') });
  await expect(async () => assert.equal(await saved.count(), 1));
  assert.match(await saved.innerText(), /ls -1/);
  assert.deepEqual(errors, []);
});
