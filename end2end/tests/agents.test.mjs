// Two agents side by side in one folder, as a user works with them in headless
// Chromium: the built-in agent (against a scripted model) and the real Gemini
// CLI (against a fake Gemini API), the latter from the hub's agents file with
// its own environment. A new session picks its agent; the header and the list
// name each session's agent; each answers in its own session; the folder
// remembers the last choice; an agent that cannot start is listed as such.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { makeFolder } from '../hub.mjs';
import { openChat, sendPrompt } from '../chat-page.mjs';
import { hubWithModel } from '../setup.mjs';
import { text } from '../fake-model.mjs';
import { startFakeGemini, geminiAgent, say } from '../fake-gemini.mjs';

const agentsFile = join(mkdtempSync(join(tmpdir(), 'hub-agents-')), 'agents.json');
let gemini;

// Registered first: Gemini CLI's fake API and its entry in the agents file, before the hub starts.
before(async () => {
  gemini = await startFakeGemini();
  const agent = geminiAgent(gemini);
  const [command, ...args] = agent.command;
  writeFileSync(agentsFile, JSON.stringify({
    agent_servers: {
      gemini: { command, args, env: agent.env },
      broken: { name: 'Broken agent', command: '/nonexistent/agent-hub-broken-agent' },
    },
  }));
});

const setup = hubWithModel(['--agents-file', agentsFile]);

// Registered last: stopped after the browser, the hub and the model.
after(async () => {
  await gemini?.stop();
});

const sessionInUrl = (page) => new URL(page.url()).searchParams.get('session');
const transcript = (page) => page.getByTestId('chat').innerText();
const headerAgent = (page) => page.getByTestId('session-agent').innerText();
const row = (page, hasText) => page.getByTestId('session-list').getByTestId('session-open').filter({ hasText });

test('two sessions in one folder work with the built-in agent and Gemini CLI', async () => {
  const folder = realpathSync(makeFolder());
  setup.model.script(text('Built-in answer.'));
  const { page, errors } = await openChat(setup.browser, setup.hub, folder);
  await expect(async () => assert.equal(await headerAgent(page), 'Built-in agent'));
  await sendPrompt(page, 'hello built-in');
  await expect(async () => assert.match(await transcript(page), /Built-in answer\./));
  const first = sessionInUrl(page) ?? (await setup.hub.api(`/api/chat/config?folderPath=${encodeURIComponent(folder)}`)).body.sessionId;

  // The picker lists every agent; one that cannot start is disabled, and why is said.
  const select = page.getByTestId('agent-select');
  await expect(async () => assert.equal(await select.inputValue(), 'builtin'));
  assert.equal(await select.locator('option[value="broken"]').isDisabled(), true);
  assert.equal(await select.locator('option[value="gemini"]').isDisabled(), false);
  const unavailable = page.getByTestId('agents-unavailable');
  await unavailable.locator('summary').click();
  assert.match(await unavailable.innerText(), /Broken agent: `\/nonexistent\/agent-hub-broken-agent` is not an executable file\./);

  // A new session with Gemini CLI.
  await select.selectOption('gemini');
  await page.getByTestId('new-session').click();
  await expect(async () => assert.ok(sessionInUrl(page) && sessionInUrl(page) !== first, 'the new session is open'));
  const second = sessionInUrl(page);
  await expect(async () => assert.equal(await headerAgent(page), 'Gemini CLI'));
  gemini.script('hello gemini', say('Gemini answer.'));
  await sendPrompt(page, 'hello gemini');
  await expect(async () => assert.match(await transcript(page), /Gemini answer\./), { timeout: 60000 });
  assert.doesNotMatch(await transcript(page), /Built-in answer/);
  assert.equal(setup.model.requests.length, 1, 'only the built-in session asked the model');
  assert.ok(gemini.requests.some((r) => JSON.stringify(r.request).includes('hello gemini')), 'Gemini CLI asked the Gemini API');

  // The list names each session's agent.
  await expect(async () => assert.match(await row(page, 'hello gemini').innerText(), /Gemini CLI/));
  assert.match(await row(page, 'hello built-in').innerText(), /Built-in agent/);

  // Back to the first: its own agent and transcript.
  await row(page, 'hello built-in').click();
  await expect(async () => assert.equal(await headerAgent(page), 'Built-in agent'));
  await expect(async () => assert.match(await transcript(page), /Built-in answer\./));
  assert.doesNotMatch(await transcript(page), /Gemini answer/);

  // A reload of the Gemini session: the same view; the picker starts on the folder's last choice.
  await row(page, 'hello gemini').click();
  await expect(async () => assert.equal(sessionInUrl(page), second));
  await page.reload();
  await page.waitForSelector('html[data-hydrated="true"]');
  await expect(async () => assert.equal(await headerAgent(page), 'Gemini CLI'));
  await expect(async () => assert.match(await transcript(page), /Gemini answer\./));
  await expect(async () => assert.equal(await page.getByTestId('agent-select').inputValue(), 'gemini'));
  assert.deepEqual(errors, []);
});
