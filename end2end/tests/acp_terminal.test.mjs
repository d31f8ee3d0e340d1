// The real Claude Code runs its commands in the hub's terminals (issue 38,
// item 4): the hub advertises ACP's `terminal`, so Claude Code's Bash asks
// permission and then runs through `terminal/create` in the hub's command
// sandbox (a write outside the folder is refused), and the page shows what
// the command prints while it runs, in real Chromium.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { last, sessionEvents } from '../acp-events.mjs';
import { ROOT, launchBrowser, makeFolder, snapshot } from '../hub.mjs';
import { startFakeAnthropic, claudeAgent, bash, say } from '../fake-anthropic.mjs';
import { hubWithAgent } from '../setup.mjs';
import { openChat, sendPrompt } from '../chat-page.mjs';

const setup = hubWithAgent(startFakeAnthropic, claudeAgent);

/** A dir outside `/tmp` (the sandbox's own is private) and outside the folder. */
function outsideDir() {
  const base = join(ROOT, 'target', 'e2e-outside');
  mkdirSync(base, { recursive: true });
  return mkdtempSync(join(base, 'terminal-'));
}

test('Claude Code\'s Bash runs in the hub\'s sandboxed terminal, its output shown as it comes', async () => {
  setup.browser = await launchBrowser();
  const folder = makeFolder();
  const outside = outsideDir();
  writeFileSync(join(folder, 's.sh'), [
    'echo "first line"',
    `echo escaped > '${join(outside, 'escaped')}' || echo "no write outside"`,
    'while [ ! -e go ]; do sleep 0.05; done',
    'echo "second line"',
  ].join('\n'));
  const on = await setup.hub.api('/api/chat/config', { method: 'POST', body: JSON.stringify({ folderPath: folder, yoloMode: true }) });
  assert.equal(on.body.yoloMode, true, JSON.stringify(on.body));
  setup.model.script('run the script', bash('bash s.sh', 'Run the script'), say('The script ran.'));

  const { page, errors } = await openChat(setup.browser, setup.hub, folder);
  await sendPrompt(page, 'run the script');
  const entry = page.getByTestId('tool-entry').first();
  const live = page.getByTestId('tool-live');
  // The command waits for `go`: what it printed so far is on the page, under the running call.
  await expect(async () => assert.match(await live.innerText(), /first line/), { timeout: 60000 });
  await expect(async () => assert.match(await live.innerText(), /no write outside/));
  assert.equal(await entry.getAttribute('data-state'), 'running');
  assert.doesNotMatch(await live.innerText(), /second line/);
  await snapshot(page, 'acp-terminal-live');

  writeFileSync(join(folder, 'go'), '');
  const output = page.getByTestId('tool-output');
  await expect(async () => assert.match(await output.textContent(), /second line/), { timeout: 30000 });
  assert.match(await output.textContent(), /Exit code: 0/);
  assert.match(await output.textContent(), /Read-only file system/, 'the sandbox refused the write outside');
  assert.equal(await live.count(), 0, 'the live view gives way to the result');
  assert.equal(existsSync(join(outside, 'escaped')), false);

  // The hub ran it: the transcript has the live pieces before the call's result.
  const { sessionId } = (await setup.hub.api(`/api/chat/config?folderPath=${encodeURIComponent(folder)}`)).body;
  const events = await sessionEvents(setup.hub, sessionId);
  const call = events.find((event) => event.type === 'tool_use');
  assert.equal(call.tool_name, 'Bash', JSON.stringify(call));
  const pieces = events.filter((event) => event.type === 'tool_output' && event.tool_id === call.tool_id);
  const result = events.findIndex((event) => event.type === 'tool_result' && event.tool_id === call.tool_id);
  assert.ok(pieces.length > 0, JSON.stringify(events));
  assert.ok(events.indexOf(pieces[0]) < result, 'live output comes before the result');
  assert.equal(last(events).status, 'success');
  assert.deepEqual(errors, []);
  await page.context().close();
});
