// The hub driving the real Codex over ACP (codex-acp 0.16.0, pinned in
// end2end/acp-agents) against a scripted OpenAI Responses API
// (end2end/fake-openai-responses.mjs): Codex's permission requests become the
// hub's cards showing what is decided on, with Codex's own choices; approve runs
// the call once, reject runs nothing and leaves the next turn clean, YOLO
// answers by itself, Stop ends a turn, a restarted hub goes on with the
// conversation, and the mode the hub puts Codex in keeps every write on a card.
//
// What Codex does (server/src/agents/acp/fixtures/codex/): a command asks only
// when the model runs it outside Codex's sandbox (`sandbox_permissions:
// "require_escalated"`, as a real model does in read-only mode when it has to
// write), and then the permission request is the call's first sighting; a file
// write (apply_patch) is announced first, already "in_progress", then asks.
// Its reject option ("abort") ends the turn at once, with no result for the call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { startHub, makeFolder } from '../hub.mjs';
import { last, sessionOf, toolEvents, results, said, card, choices, pendingCall, sessionEvents as eventsOf } from '../acp-events.mjs';
import { startFakeResponses, codexAgent, shell, writeFile, editFile, say, think, hang } from '../fake-openai-responses.mjs';
import { hubWithAgent } from '../setup.mjs';

const setup = hubWithAgent(startFakeResponses, codexAgent);

const prompt = (folder, message, someHub = setup.hub) => someHub.stream('/api/chat/prompt', { folderPath: folder, message });
const decide = (session, body) => setup.hub.stream(`/api/sessions/${session}/approve`, body);

/** A command Codex runs outside its sandbox: it asks first. */
const escalated = (cmd) => shell(cmd, { sandbox_permissions: 'require_escalated', justification: `Run \`${cmd}\` in the folder?` });



/** Every event the session ever had (NDJSON). */
const sessionEvents = (session, someHub = setup.hub) => eventsOf(someHub, session);


const COMMAND_CHOICES = [
  { id: 'approved', name: 'Yes, proceed', kind: 'allow_once' },
  { id: 'approved-execpolicy-amendment', name: "Yes, and don't ask again for commands that start with `/bin/bash -lc echo hi > from_agent.txt`", kind: 'allow_always' },
  { id: 'abort', name: 'No, and tell Codex what to do differently', kind: 'reject_once' },
];
const EDIT_CHOICES = [
  { id: 'approved', name: 'Yes', kind: 'allow_once' },
  { id: 'abort', name: 'No, provide feedback', kind: 'reject_once' },
];

test('a command card shows the command and Codex\'s own choices; approving runs it once', async () => {
  const folder = makeFolder();
  setup.model.script('make from_agent.txt', think('One command will do.', escalated('echo hi > from_agent.txt')), say('Made from_agent.txt.'));
  const first = await prompt(folder, 'please make from_agent.txt');
  const id = pendingCall(first);
  const shown = card(first.events, id);
  assert.equal(shown.kind, 'execute');
  assert.equal(shown.parameters.command, 'echo hi > from_agent.txt', `the command text: ${JSON.stringify(shown)}`);
  assert.equal(shown.tool_name, 'echo hi > from_agent.txt', 'Codex names no tool (no _meta): its title');
  assert.deepEqual(choices(first.events, id), COMMAND_CHOICES);
  const thought = first.events.filter((event) => event.type === 'thought').map((event) => event.content).join('');
  assert.equal(thought.trim(), 'One command will do.', 'the reasoning summary streams as thought');
  assert.equal(existsSync(join(folder, 'from_agent.txt')), false, 'nothing runs before the decision');

  const session = sessionOf(first.events);
  const rest = await decide(session, { toolId: id, decision: 'approve' });
  assert.equal(rest.status, 200, JSON.stringify(rest.body));
  assert.equal(last(rest.events).status, 'success', JSON.stringify(rest.events));
  assert.equal(readFileSync(join(folder, 'from_agent.txt'), 'utf8'), 'hi\n');
  assert.equal(said(rest.events), 'Made from_agent.txt.');

  // codex-acp 0.16.0 sometimes never sends the finished command's update
  // (its model was told "Process exited with code 0"; seen in about half the
  // runs under load), or sends it after the turn. The hub shows what it gets:
  // never two results, and a result is the command's output.
  let all = await sessionEvents(session);
  for (let tries = 0; tries < 30 && results(all, id).length === 0; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    all = await sessionEvents(session);
  }
  const done = results(all, id);
  assert.ok(done.length <= 1, `never two results: ${JSON.stringify(toolEvents(all, id))}`);
  const outcome = done[0] ?? { status: 'success', output: '' };
  assert.equal(outcome.status, 'success');
  assert.equal(all.filter((event) => event.type === 'tool_use' && event.tool_id === id).length, 1,
    'Codex announcing the approved call again (a second tool_call) makes no second card');
  // Codex's result carries no `content` when the command printed nothing: the
  // result is the command's (empty) output, not the permission request's text.
  assert.doesNotMatch(outcome.output ?? '', /Proposed Amendment|Available Decisions/, JSON.stringify(outcome));
});

test('a new file\'s card shows its diff relative to the folder; approving writes it', async () => {
  const folder = makeFolder();
  setup.model.script('write notes', writeFile('notes.txt', 'hello\nworld\n'), say('Wrote notes.txt.'));
  const first = await prompt(folder, 'write notes please');
  const id = pendingCall(first);
  const shown = card(first.events, id);
  assert.equal(shown.kind, 'edit');
  assert.deepEqual(shown.diff, { path: 'notes.txt', old_text: '', new_text: 'hello\nworld\n' });
  assert.match(shown.tool_name, /notes\.txt/);
  assert.deepEqual(choices(first.events, id), EDIT_CHOICES);
  assert.equal(existsSync(join(folder, 'notes.txt')), false, 'Codex says "in_progress" before asking, but writes nothing yet');

  const session = sessionOf(first.events);
  const rest = await decide(session, { toolId: id, decision: 'approve' });
  assert.equal(last(rest.events).status, 'success', JSON.stringify(rest.events));
  assert.equal(readFileSync(join(folder, 'notes.txt'), 'utf8'), 'hello\nworld\n');
  const done = results(await sessionEvents(session), id);
  assert.deepEqual(done.map((event) => event.status), ['success']);
});

test('an edit card shows the file\'s old and new text; approving edits it', async () => {
  const folder = makeFolder();
  writeFileSync(join(folder, 'greeting.txt'), 'line one\nhello\nline three\n');
  setup.model.script('fix greeting', editFile('greeting.txt', 'hello', 'hello, world'), say('Edited greeting.txt.'));
  const first = await prompt(folder, 'fix greeting please');
  const id = pendingCall(first);
  const shown = card(first.events, id);
  assert.equal(shown.kind, 'edit');
  assert.deepEqual(shown.diff, { path: 'greeting.txt', old_text: 'line one\nhello\nline three\n', new_text: 'line one\nhello, world\nline three\n' });
  assert.equal(readFileSync(join(folder, 'greeting.txt'), 'utf8'), 'line one\nhello\nline three\n');

  const rest = await decide(sessionOf(first.events), { toolId: id, decision: 'approve' });
  assert.equal(last(rest.events).status, 'success', JSON.stringify(rest.events));
  assert.equal(readFileSync(join(folder, 'greeting.txt'), 'utf8'), 'line one\nhello, world\nline three\n');
});

/** Rejects the card of `first`, then checks the session's record and a clean next turn. */
async function rejectThenGoOn(folder, first, { file, nextPrompt, nextAnswer }) {
  const id = pendingCall(first);
  const session = sessionOf(first.events);
  const rest = await decide(session, { toolId: id, decision: 'reject' });
  assert.equal(rest.status, 200, JSON.stringify(rest.body));
  assert.deepEqual(results(rest.events, id).map((event) => event.status), ['skipped'], JSON.stringify(rest.events));
  assert.equal(last(rest.events).status, 'cancelled', JSON.stringify(rest.events));
  assert.equal(existsSync(join(folder, file)), false, 'nothing ran');

  const next = await prompt(folder, nextPrompt);
  assert.equal(next.status, 200, JSON.stringify(next.body));
  assert.equal(last(next.events).status, 'success', JSON.stringify(next.events));
  assert.equal(said(next.events), nextAnswer, 'the new prompt gets its own scripted answer');
  assert.deepEqual(next.events.filter((event) => event.type.startsWith('tool_')), [], 'no card, no result of the old call in the new turn');
  assert.equal(existsSync(join(folder, file)), false);

  const all = await sessionEvents(session);
  assert.deepEqual(results(all, id).map((event) => event.status), ['skipped'], `one result in the whole session: ${JSON.stringify(toolEvents(all, id))}`);
  const asked = setup.model.requests.findLast((r) => JSON.stringify(r.request.input).includes(nextPrompt));
  assert.ok(asked, 'the new prompt reached the model');
}

test('rejecting a command: it does not run, one skipped result, and the next prompt is clean', async () => {
  const folder = makeFolder();
  setup.model.script('make rejected.txt', escalated('echo no > rejected.txt'), say('I should not get here.'));
  setup.model.script('what now', say('Second turn answer.'));
  const first = await prompt(folder, 'please make rejected.txt');
  await rejectThenGoOn(folder, first, { file: 'rejected.txt', nextPrompt: 'what now?', nextAnswer: 'Second turn answer.' });
  assert.ok(!setup.model.requests.some((r) => JSON.stringify(r.request.input).includes('I should not get here.')));
});

test('rejecting a write Codex already announced: one skipped result, and the next prompt is clean', async () => {
  const folder = makeFolder();
  setup.model.script('write secret', writeFile('secret.txt', 'secret\n'), say('I should not get here.'));
  setup.model.script('and now', say('Next turn answer.'));
  const first = await prompt(folder, 'write secret please');
  await rejectThenGoOn(folder, first, { file: 'secret.txt', nextPrompt: 'and now?', nextAnswer: 'Next turn answer.' });
});

test('YOLO: the hub answers for the user; a command and a write run with no card', async () => {
  const folder = makeFolder();
  const on = await setup.hub.api('/api/chat/config', { method: 'POST', body: JSON.stringify({ folderPath: folder, yoloMode: true }) });
  assert.equal(on.body.yoloMode, true);
  setup.model.script('yolo both', escalated('echo yolo > y.txt'), writeFile('z.txt', 'zed\n'), say('Done in YOLO.'));
  const turn = await prompt(folder, 'yolo both');
  assert.equal(last(turn.events).status, 'success', JSON.stringify(turn.events));
  assert.ok(!turn.events.some((event) => event.type === 'result' && event.status === 'waiting_approval'));
  const ids = [...new Set(turn.events.filter((event) => event.type === 'tool_use').map((event) => event.tool_id))];
  assert.equal(ids.length, 2, JSON.stringify(turn.events));
  for (const id of ids) {
    const tools = toolEvents(turn.events, id);
    assert.equal(tools[0].type, 'tool_use', JSON.stringify(tools));
    assert.deepEqual(results(turn.events, id).map((event) => event.status), ['success'], JSON.stringify(tools));
    assert.equal(last(tools).type, 'tool_result', JSON.stringify(tools));
  }
  assert.equal(readFileSync(join(folder, 'y.txt'), 'utf8'), 'yolo\n');
  assert.equal(readFileSync(join(folder, 'z.txt'), 'utf8'), 'zed\n');
});

test('Codex runs in the mode the hub picks, where no write skips the card', async () => {
  const folder = makeFolder();
  setup.model.script('mode check', shell('echo quiet > plain.txt'), writeFile('patched.txt', 'patched\n'), say('Mode checked.'));
  const first = await prompt(folder, 'mode check');

  const config = (await setup.hub.api(`/api/chat/config?folderPath=${encodeURIComponent(folder)}`)).body;
  const modes = config.agentModes;
  assert.ok(modes, `agentModes in ${JSON.stringify(config)}`);
  assert.deepEqual(modes.modes.map((mode) => mode.id), ['read-only', 'auto', 'full-access']);
  assert.equal(modes.chosenByUser, false);
  // Codex's only preset that asks before writing in the folder: "auto" writes
  // patches there by itself (auto_approved) and "full-access" never asks.
  assert.equal(modes.currentModeId, 'read-only');
  assert.deepEqual(modes.modes.map((mode) => [mode.id, mode.asks]), [['read-only', true], ['auto', false], ['full-access', false]]);
  const request = setup.model.requests.findLast((r) => JSON.stringify(r.request.input).includes('mode check'));
  assert.match(JSON.stringify(request.request.input), /`sandbox_mode` is `read-only`/, 'the model is told it is in the read-only sandbox');

  // The plain command ran inside Codex's read-only sandbox (no card): it could not write.
  assert.equal(existsSync(join(folder, 'plain.txt')), false, 'a command never writes in the folder without a card');
  // The write asks.
  const id = pendingCall(first);
  assert.deepEqual(card(first.events, id).diff, { path: 'patched.txt', old_text: '', new_text: 'patched\n' });
  assert.equal(existsSync(join(folder, 'patched.txt')), false);
  const rest = await decide(sessionOf(first.events), { toolId: id, decision: 'approve' });
  assert.equal(last(rest.events).status, 'success', JSON.stringify(rest.events));
  assert.equal(readFileSync(join(folder, 'patched.txt'), 'utf8'), 'patched\n');
  assert.equal(existsSync(join(folder, 'plain.txt')), false);
});

test('Stop ends a turn cancelled and the next prompt works', async () => {
  const folder = makeFolder();
  setup.model.script('slow work', hang());
  setup.model.script('after the stop', say('Back after the stop.'));
  const waiting = setup.model.hanging();
  const stream = prompt(folder, 'slow work');
  await expect(() => assert.ok(setup.model.hanging() > waiting), { timeout: 30000 });
  const session = (await setup.hub.api(`/api/chat/config?folderPath=${encodeURIComponent(folder)}`)).body.sessionId;
  const stopped = await setup.hub.stream(`/api/sessions/${session}/cancel`, {});
  assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
  const turn = await stream;
  assert.equal(last(turn.events).status, 'cancelled', JSON.stringify(turn.events));
  // (Codex leaves a cancelled turn's model request open: `hanging()` stays up.)

  const next = await prompt(folder, 'after the stop');
  assert.equal(last(next.events).status, 'success', JSON.stringify(next.events));
  assert.equal(said(next.events), 'Back after the stop.');
});

test('after a hub restart the conversation goes on (session/load)', async () => {
  const folder = makeFolder();
  setup.model.script('remember plum', say('Noted: plum.'));
  setup.model.script('after the restart', say('Still here.'));
  const own = await startHub(setup.agent.args, setup.agent.env);
  let session;
  try {
    const first = await prompt(folder, 'remember plum', own);
    assert.equal(last(first.events).status, 'success', JSON.stringify(first.events));
    session = sessionOf(first.events);
  } finally {
    await own.stop();
  }
  const restarted = await startHub(setup.agent.args, setup.agent.env, { dataDir: own.dataDir });
  try {
    const turn = await prompt(folder, 'after the restart', restarted);
    assert.equal(last(turn.events).status, 'success', JSON.stringify(turn.events));
    assert.equal(sessionOf(turn.events), session, 'the same hub session');
    assert.ok(!turn.events.some((event) => event.type === 'error'), JSON.stringify(turn.events));
    assert.equal(said(turn.events), 'Still here.');
    const request = setup.model.requests.findLast((r) => JSON.stringify(r.request.input).includes('after the restart'));
    assert.ok(JSON.stringify(request.request.input).includes('remember plum'), 'the new Codex process loaded the session: the model sees the earlier turn');
    assert.ok(JSON.stringify(request.request.input).includes('Noted: plum.'));
    // The replayed history is not shown again as new events.
    const all = await sessionEvents(session, restarted);
    assert.equal(all.filter((event) => event.type === 'message' && event.role === 'user' && event.content === 'remember plum').length, 1);
  } finally {
    await restarted.stop();
  }
});
