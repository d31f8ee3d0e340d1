// The hub driving the real Gemini CLI over ACP (`gemini --acp`, installed from
// npm by the test script) against a fake Gemini API: the CLI's permission
// requests become the hub's cards, decisions go back as its options, YOLO
// answers by itself, and a crashed agent is reported and replaced.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { startHub, launchBrowser, makeFolder, snapshot } from '../hub.mjs';
import { openChat, sendPrompt } from '../chat-page.mjs';
import { startFakeGemini, geminiAgent, callTool, say, think, hang } from '../fake-gemini.mjs';
import { hubWithAgent } from '../setup.mjs';

const setup = hubWithAgent(startFakeGemini, geminiAgent);

const prompt = (folder, message) => setup.hub.stream('/api/chat/prompt', { folderPath: folder, message });
const decide = (session, body) => setup.hub.stream(`/api/sessions/${session}/approve`, body);
const types = (events) => events.map((event) => event.type);
const last = (events) => events.at(-1);

/** Every seq once, increasing: nothing lost, nothing twice. */
function assertSeqsIncrease(events) {
  events.slice(1).forEach((event, i) => assert.ok(event.seq > events[i].seq, `seq ${event.seq} after ${events[i].seq}`));
}

test('a shell call becomes a card; approving runs it in the folder', async () => {
  const folder = makeFolder();
  setup.model.script('make out.txt',
    think('The user wants a file.', callTool('run_shell_command', { command: 'echo hi > out.txt', description: 'make it' })),
    say('Made out.txt.'));
  const first = await prompt(folder, 'please make out.txt');
  assert.equal(first.status, 200, JSON.stringify(first.body));
  const use = first.events.find((event) => event.type === 'tool_use');
  assert.ok(use, `a tool_use in ${JSON.stringify(types(first.events))}`);
  assert.equal(use.kind, 'execute');
  assert.equal(use.tool_name, 'echo hi > out.txt');
  assert.deepEqual(last(first.events), { type: 'result', status: 'waiting_approval', pending: [use.tool_id], seq: last(first.events).seq });
  assert.ok(first.events.some((event) => event.type === 'thought' && event.content.includes('The user wants a file.')));
  assert.equal(existsSync(join(folder, 'out.txt')), false, 'nothing runs before the decision');

  const session = first.events.find((event) => event.type === 'init').session_id;
  const detail = await setup.hub.api(`/api/sessions/${session}`);
  assert.equal(detail.body.status, 'waiting_approval');
  assert.equal(detail.body.pendingApproval.toolId, use.tool_id);

  const stale = await decide(session, { toolId: 'no-such-call', decision: 'approve' });
  assert.equal(stale.status, 409);
  assert.equal(stale.body.error, 'not_pending');

  const rest = await decide(session, { toolId: use.tool_id, decision: 'approve' });
  assert.equal(rest.status, 200, JSON.stringify(rest.body));
  const result = rest.events.find((event) => event.type === 'tool_result');
  assert.equal(result?.status, 'success', JSON.stringify(rest.events));
  assert.equal(last(rest.events).status, 'success');
  assert.ok(rest.events.some((event) => event.type === 'message' && event.content.includes('Made out.txt.')));
  assert.equal(readFileSync(join(folder, 'out.txt'), 'utf8'), 'hi\n');
  assertSeqsIncrease([...first.events, ...rest.events]);

  const again = await decide(session, { toolId: use.tool_id, decision: 'approve' });
  assert.equal(again.status, 409, 'a decided call is not pending any more');
});

test('a rejected write leaves no file and ends the turn cancelled', async () => {
  const folder = makeFolder();
  setup.model.script('write notes', callTool('write_file', { file_path: 'notes.txt', content: 'secret\n' }), say('I wrote it anyway?'));
  const first = await prompt(folder, 'write notes please');
  const use = first.events.find((event) => event.type === 'tool_use');
  assert.equal(use.kind, 'edit');
  assert.deepEqual(use.diff, { path: 'notes.txt', old_text: '', new_text: 'secret\n' });
  const session = first.events.find((event) => event.type === 'init').session_id;

  const changed = await decide(session, { toolId: use.tool_id, decision: 'approve', modifiedContent: 'mine\n' });
  assert.equal(changed.status, 400, 'Gemini CLI applies its own edits: a changed version is refused, clearly');
  assert.match(changed.body.message, /reject it, or say what to do instead/);

  const rest = await decide(session, { toolId: use.tool_id, decision: 'reject' });
  assert.equal(rest.status, 200);
  const skipped = rest.events.find((event) => event.type === 'tool_result');
  assert.equal(skipped.status, 'skipped');
  assert.equal(last(rest.events).status, 'cancelled');
  assert.equal(existsSync(join(folder, 'notes.txt')), false);
  assert.equal((await setup.hub.api(`/api/sessions/${session}`)).body.status, 'idle');
});

test('telling the agent what to do instead sends the feedback as its next prompt', async () => {
  const folder = makeFolder();
  setup.model.script('clean up', callTool('run_shell_command', { command: 'rm -rf build' }));
  setup.model.script('[USER FEEDBACK - Tool was not executed]: only delete build/tmp',
    callTool('run_shell_command', { command: 'rm -rf build/tmp' }));
  const first = await prompt(folder, 'clean up');
  const use = first.events.find((event) => event.type === 'tool_use');
  const session = first.events.find((event) => event.type === 'init').session_id;

  const blank = await decide(session, { toolId: use.tool_id, decision: 'edit', editInstruction: '  ' });
  assert.equal(blank.status, 400);

  const rest = await decide(session, { toolId: use.tool_id, decision: 'edit', editInstruction: 'only delete build/tmp' });
  assert.equal(rest.status, 200);
  const skipped = rest.events.find((event) => event.type === 'tool_result');
  assert.equal(skipped.output, '[USER FEEDBACK - Tool was not executed]: only delete build/tmp');
  const next = rest.events.filter((event) => event.type === 'tool_use');
  assert.equal(next.length, 1, JSON.stringify(rest.events));
  assert.equal(next[0].tool_name, 'rm -rf build/tmp', 'the regenerated call is on a new card');
  assert.deepEqual(last(rest.events).pending, [next[0].tool_id]);

  const done = await decide(session, { toolId: next[0].tool_id, decision: 'reject' });
  assert.equal(last(done.events).status, 'cancelled');
});

test('YOLO: the hub allows the call itself and the turn runs through', async () => {
  const folder = makeFolder();
  const on = await setup.hub.api('/api/chat/config', { method: 'POST', body: JSON.stringify({ folderPath: folder, yoloMode: true }) });
  assert.equal(on.body.yoloMode, true);
  setup.model.script('yolo file', callTool('run_shell_command', { command: 'echo yolo > y.txt' }), say('Done in YOLO.'));
  const turn = await prompt(folder, 'yolo file');
  assert.deepEqual(types(turn.events).filter((type) => type.startsWith('tool')), ['tool_use', 'tool_result']);
  assert.equal(last(turn.events).status, 'success');
  assert.equal(readFileSync(join(folder, 'y.txt'), 'utf8'), 'yolo\n');
});

// Gemini CLI (0.61.0) names a session's file by the UTC minute the session
// began and its id, and its session/load first starts a fresh recording of the
// session under the *current* minute's name. Within the minute the session
// began, that name is the session's own file: the fresh start appended to it
// hides the conversation, and the load fails with "No previous sessions found
// for this project." (google-gemini/gemini-cli#28693, #28775; a real restart is
// rarely that quick, and the hub then says so and starts a new conversation).
// So each scenario loads only after that minute: it counts from when its first
// turn was answered, by which time the session's file exists (the agent opens
// the session before the hub sends the prompt). The two run side by side.
test('a dead agent is reported and replaced; after a crash or a hub restart the conversation goes on', async () => {
  await Promise.all([agentCrashScenario(), hubRestartScenario()]);
});

async function agentCrashScenario() {
  const folder = makeFolder();
  setup.model.script('remember kiwi', say('Noted: kiwi.'));
  setup.model.script('slow work', hang());
  setup.model.script('after the crash', say('Back again.'));
  assert.equal(last((await prompt(folder, 'remember kiwi')).events).status, 'success');
  const sessionBegun = Date.now();
  const stream = prompt(folder, 'slow work');
  const firstAgent = await expect(() => {
    const pids = agentsIn(setup.hub, folder);
    assert.equal(pids.length, 1, `one agent process in the folder: ${pids}`);
    return pids[0];
  }, { timeout: 30000 });
  await expect(() => assert.ok(setup.model.hanging() > 0), { timeout: 30000 });
  process.kill(firstAgent, 'SIGKILL');
  const crashed = await stream;
  const error = crashed.events.find((event) => event.type === 'error');
  assert.equal(error?.code, 'agent_crashed', JSON.stringify(crashed.events));
  assert.match(error.message, /exited/);
  assert.equal(last(crashed.events).status, 'error');
  const session = crashed.events.find((event) => event.type === 'init').session_id;
  assert.equal((await setup.hub.api(`/api/sessions/${session}`)).body.status, 'error');

  await nextMinute(sessionBegun);
  const after = await prompt(folder, 'after the crash');
  assert.equal(last(after.events).status, 'success', JSON.stringify(after.events));
  assert.ok(!after.events.some((event) => event.type === 'error'), JSON.stringify(after.events));
  assert.ok(after.events.some((event) => event.type === 'message' && event.content.includes('Back again.')));
  const request = setup.model.requests.findLast((r) => JSON.stringify(r.request.contents).includes('after the crash'));
  assert.ok(JSON.stringify(request.request.contents).includes('remember kiwi'),
    'the new process loaded the session (session/load): the model sees the earlier turn');
  const [secondAgent] = agentsIn(setup.hub, folder);
  assert.ok(secondAgent && secondAgent !== firstAgent, 'a new agent process works in the folder');
}

async function hubRestartScenario() {
  const folder = makeFolder();
  setup.model.script('remember plum', say('Noted: plum.'));
  setup.model.script('then touch it', callTool('run_shell_command', { command: 'touch plum.txt' }));
  setup.model.script('after the restart', say('Still here.'));
  const own = await startHub(setup.agent.args, setup.agent.env);
  let sessionBegun;
  let agentPid;
  let session;
  try {
    const first = await own.stream('/api/chat/prompt', { folderPath: folder, message: 'remember plum' });
    assert.equal(last(first.events).status, 'success');
    sessionBegun = Date.now();
    session = first.events.find((event) => event.type === 'init').session_id;
    [agentPid] = agentsIn(own, folder);
    assert.ok(agentPid, 'the agent runs in the folder');
    // The hub dies while a card waits.
    const waiting = await own.stream('/api/chat/prompt', { folderPath: folder, message: 'then touch it' });
    assert.equal(last(waiting.events).status, 'waiting_approval');
  } finally {
    await own.kill();
  }
  await expect(() => assert.throws(() => process.kill(agentPid, 0), 'the agent died with the hub'), { timeout: 5000 });

  await nextMinute(sessionBegun);
  const restarted = await startHub(setup.agent.args, setup.agent.env, { dataDir: own.dataDir });
  try {
    // The agent's permission request died with it: the turn is closed, nothing runs.
    const detail = (await restarted.api(`/api/sessions/${session}`)).body;
    assert.equal(detail.status, 'error');
    assert.equal(detail.pendingApproval, null);
    assert.equal(detail.events.at(-2).code, 'interrupted');
    const late = await restarted.stream(`/api/sessions/${session}/approve`, { toolId: detail.events.find((e) => e.type === 'tool_use').tool_id, decision: 'approve' });
    assert.equal(late.status, 409);
    assert.equal(existsSync(join(folder, 'plum.txt')), false);

    const turn = await restarted.stream('/api/chat/prompt', { folderPath: folder, message: 'after the restart' });
    assert.equal(last(turn.events).status, 'success', JSON.stringify(turn.events));
    assert.ok(!turn.events.some((event) => event.type === 'error'), JSON.stringify(turn.events));
    const request = setup.model.requests.findLast((r) => JSON.stringify(r.request.contents).includes('after the restart'));
    assert.ok(JSON.stringify(request.request.contents).includes('remember plum'), 'the conversation goes on after a hub restart');
  } finally {
    await restarted.stop();
  }
}

test('in the browser: key 1 approves, thinking is folded, an edit card has no editor, Stop ends a turn', async () => {
  setup.browser = await launchBrowser();
  const folder = makeFolder();
  setup.model.script('browser file', think('Plan: one command.', callTool('run_shell_command', { command: 'echo page > page.txt' })),
    say('Made **page.txt**.'));
  const { page, errors } = await openChat(setup.browser, setup.hub, folder);
  await sendPrompt(page, 'browser file');
  const card = page.getByTestId('approval-card');
  await card.waitFor({ timeout: 30000 });
  assert.equal(await page.getByTestId('card-tool').innerText(), 'echo page > page.txt');
  // The choices are Gemini CLI's own: its "Allow" and "Reject" on the hub's keys, its
  // "Allow for this session" (which it remembers itself) apart, in its own words.
  const approve = page.getByTestId('card-approve');
  assert.match(await approve.innerText(), /Allow$/);
  assert.equal(await approve.getAttribute('aria-description'), 'Yes — runs this call once (key 1)');
  assert.match(await page.getByTestId('card-reject').innerText(), /Reject$/);
  assert.match(await page.getByTestId('card-approve_session').innerText(), /Yes, for this session$/);
  const own = page.getByTestId('card-agent-choices');
  assert.match(await own.innerText(), /The agent's own choices:[\s\S]*Allow for this session/);
  assert.equal(await own.getByTestId('card-agent-option').getAttribute('data-option-id'), 'proceed_always');
  assert.match(await page.getByTestId('card-agent-remembers').innerText(), /the hub cannot show or withdraw them/);
  assert.equal(await page.getByTestId('card-no-details').count(), 0, 'the command is on the card');
  const thought = page.getByTestId('thought');
  assert.equal(await thought.getAttribute('open'), null, 'thinking starts folded');
  assert.match(await thought.innerText(), /Thinking/);
  await snapshot(page, 'acp-card');
  await expect(async () => assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'approval-card'));
  await page.keyboard.press('1');
  await card.waitFor({ state: 'detached' });
  await expect(async () => assert.match(await page.getByTestId('assistant-message').last().innerText(), /Made page\.txt\./), { timeout: 30000 });
  assert.equal(readFileSync(join(folder, 'page.txt'), 'utf8'), 'page\n');

  // An edit card: the diff, and no editor (Gemini CLI writes its own version).
  setup.model.script('browser edit', callTool('write_file', { file_path: 'draft.md', content: '# Draft\n' }));
  await sendPrompt(page, 'browser edit');
  await card.waitFor({ timeout: 30000 });
  assert.match(await card.innerText(), /# Draft/);
  assert.equal(await page.getByTestId('card-open_editor').count(), 0, 'no Edit button');
  assert.match(await page.getByTestId('card-hint').innerText(), /Enter Allow • a For this session • t For this turn • d Reject • 4 Instruct/);
  await snapshot(page, 'acp-edit-card');
  await expect(async () => assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'approval-card'));
  await page.keyboard.press('e');
  assert.equal(await page.getByTestId('card-editor').isVisible(), false, 'e opens nothing');
  await page.keyboard.press('d');
  await card.waitFor({ state: 'detached' });
  await expect(async () => assert.match(await page.getByTestId('notice').last().innerText(), /rejected call did not run/), { timeout: 15000 });
  assert.equal(existsSync(join(folder, 'draft.md')), false);

  setup.model.script('stop me', hang());
  await sendPrompt(page, 'stop me');
  await expect(() => assert.ok(setup.model.hanging() > 0), { timeout: 30000 });
  await page.getByTestId('stop-button').waitFor();
  await snapshot(page, 'acp-working');
  await page.getByTestId('stop-button').click();
  await expect(async () => assert.match(await page.getByTestId('notice').last().innerText(), /stopped|cancelled/i), { timeout: 15000 });
  await snapshot(page, 'acp-stopped');

  // Gemini CLI's own modes, in the header: the hub keeps it in Default (it asks); a
  // mode that skips asking is confirmed first, then shown like YOLO.
  const select = page.getByLabel('Agent mode');
  await expect(async () => assert.equal(await select.inputValue(), 'default'), { timeout: 15000 });
  assert.equal(await page.getByTestId('agent-mode-source').innerText(), 'set by the hub');
  assert.ok((await select.locator('option').allInnerTexts()).includes('Auto Edit (skips asking)'));
  await select.selectOption('autoEdit');
  const confirm = page.getByTestId('agent-mode-confirm');
  await confirm.waitFor();
  assert.match(await confirm.innerText(), /skips asking/);
  await snapshot(page, 'acp-mode-confirm');
  await page.getByTestId('agent-mode-cancel').click();
  await confirm.waitFor({ state: 'detached' });
  assert.equal(await select.inputValue(), 'default', 'kept asking');
  await select.selectOption('autoEdit');
  await page.getByRole('button', { name: 'Switch to Auto Edit' }).click();
  await expect(async () => assert.equal(await page.getByTestId('agent-mode-skips').innerText(), 'Auto Edit: the agent skips asking'));
  assert.equal(await page.getByTestId('agent-mode-source').innerText(), 'set by you');
  await snapshot(page, 'acp-mode-skips');
  await select.selectOption('default');
  await page.getByTestId('agent-mode-skips').waitFor({ state: 'detached' });
  assert.equal(await page.getByTestId('agent-mode-confirm').count(), 0, 'a mode that asks needs no confirmation');
  assert.deepEqual(errors, []);
});

/** Waits for the minute after `time` to begin. */
async function nextMinute(time) {
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, 60000 - (time % 60000) + 500 - (Date.now() - time))));
}

/** A hub's agent processes working in `folder` (one per session). */
function agentsIn(someHub, folder) {
  let pids = [];
  try {
    pids = execFileSync('pgrep', ['-P', String(someHub.pid)], { encoding: 'utf8' }).trim().split('\n').map(Number);
  } catch {
    return [];
  }
  return pids.filter((pid) => {
    try {
      return readlinkSync(`/proc/${pid}/cwd`) === realpathSync(folder);
    } catch {
      return false;
    }
  });
}
