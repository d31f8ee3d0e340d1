// The hub driving the real Qwen Code over ACP (`qwen --acp`, @qwen-code/qwen-code
// 0.24.4 pinned in end2end/acp-agents) against a scripted OpenAI Chat
// Completions API (end2end/fake-qwen.mjs): Qwen Code's permission requests
// become the hub's cards showing what is decided on, with Qwen Code's own
// choices; approve runs the call once, reject runs nothing and leaves the next
// turn clean, YOLO answers by itself, Stop ends a turn, a restarted hub goes on
// with the conversation, and Qwen Code's own default mode does not get past the hub.
//
// What Qwen Code does (server/src/agents/acp/fixtures/qwen/): it announces a call
// as soon as the model starts it, before the arguments are known (`title:
// "Shell"`, `rawInput: {}`); only its permission request carries the command or
// the diff. It starts in its `auto` mode, where a write in the folder runs
// unasked and a command is judged by an LLM classifier (the fake's classifier
// allows everything, as a real one would allow these commands); `default` asks
// for both. Its reject option ("cancel") ends the turn by itself (`end_turn`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { startHub, makeFolder } from '../hub.mjs';
import { last, sessionOf, toolEvents, results, said, card, choices, pendingCall, sessionEvents as eventsOf } from '../acp-events.mjs';
import { startFakeQwen, qwenAgent, callTool, say, think, hang } from '../fake-qwen.mjs';
import { hubWithAgent } from '../setup.mjs';

const setup = hubWithAgent(startFakeQwen, qwenAgent);

const prompt = (folder, message, someHub = setup.hub) => someHub.stream('/api/chat/prompt', { folderPath: folder, message });
const decide = (session, body) => setup.hub.stream(`/api/sessions/${session}/approve`, body);
const config = async (folder, someHub = setup.hub) => (await someHub.api(`/api/chat/config?folderPath=${encodeURIComponent(folder)}`)).body;
/** The model requests of the conversation whose messages mention `text`. */
const asked = (text) => setup.model.turns().filter((r) => JSON.stringify(r.request.messages).includes(text));



/** Every event the session ever had (NDJSON). */
const sessionEvents = (session, someHub = setup.hub) => eventsOf(someHub, session);


/** The hub keeps the session in Qwen Code's `default` mode, the one that asks for commands and edits. */
async function assertAskingMode(folder, someHub = setup.hub) {
  const modes = (await config(folder, someHub)).agentModes;
  assert.ok(modes, `agentModes for ${folder}`);
  assert.deepEqual(modes.modes.map((mode) => mode.id), ['plan', 'default', 'auto-edit', 'auto', 'yolo']);
  assert.equal(modes.modes.find((mode) => mode.id === 'default').name, 'Default');
  assert.equal(modes.currentModeId, 'default', `Qwen Code starts in "auto"; the hub picks its asking mode: ${JSON.stringify(modes)}`);
  assert.notEqual(modes.modes.find((mode) => mode.id === 'default').asks, false);
  assert.equal(modes.chosenByUser, false);
}

// Qwen Code's own options, as it offers them (the hub passes them on as they are).
const COMMAND_CHOICES = [
  { id: 'proceed_always_project', name: 'Always Allow in project: echo *', kind: 'allow_always' },
  { id: 'proceed_always_user', name: 'Always Allow for user: echo *', kind: 'allow_always' },
  { id: 'proceed_once', name: 'Allow', kind: 'allow_once' },
  { id: 'cancel', name: 'Reject', kind: 'reject_once' },
];
const EDIT_CHOICES = [
  { id: 'proceed_always', name: 'Allow All Edits', kind: 'allow_always' },
  { id: 'proceed_once', name: 'Allow', kind: 'allow_once' },
  { id: 'cancel', name: 'Reject', kind: 'reject_once' },
];

test('a command card shows the command, the real tool name and Qwen Code\'s choices; approving runs it once', async () => {
  const folder = makeFolder();
  const classified = setup.model.requests.filter((r) => r.kind === 'classifier').length;
  setup.model.script('make from_agent.txt',
    think('One command will do.', callTool('run_shell_command', { command: 'echo hi > from_agent.txt', description: 'Write hi into from_agent.txt' })),
    say('Made from_agent.txt.'));
  const first = await prompt(folder, 'please make from_agent.txt');
  const id = pendingCall(first);
  const shown = card(first.events, id);
  assert.equal(shown.kind, 'execute');
  assert.equal(shown.parameters?.command, 'echo hi > from_agent.txt', `the command text: ${JSON.stringify(shown)}`);
  assert.equal(shown.tool_name, 'run_shell_command', `Qwen Code's tool name (_meta.toolName), not its title "Shell": ${JSON.stringify(shown)}`);
  assert.deepEqual(choices(first.events, id), COMMAND_CHOICES);
  assert.ok(first.events.some((event) => event.type === 'thought' && event.content.includes('One command will do.')), JSON.stringify(first.events));
  assert.equal(existsSync(join(folder, 'from_agent.txt')), false, 'nothing runs before the decision');
  await assertAskingMode(folder);
  assert.equal(setup.model.requests.filter((r) => r.kind === 'classifier').length, classified,
    'Qwen Code\'s auto-mode classifier was never asked: the hub decides');

  const session = sessionOf(first.events);
  const rest = await decide(session, { toolId: id, decision: 'approve' });
  assert.equal(rest.status, 200, JSON.stringify(rest.body));
  assert.equal(last(rest.events).status, 'success', JSON.stringify(rest.events));
  assert.equal(readFileSync(join(folder, 'from_agent.txt'), 'utf8'), 'hi\n');
  assert.equal(said(rest.events), 'Made from_agent.txt.');

  const all = await sessionEvents(session);
  assert.deepEqual(results(all, id).map((event) => event.status), ['success'], `exactly one result: ${JSON.stringify(toolEvents(all, id))}`);
  assert.equal(all.filter((event) => event.type === 'tool_use' && event.tool_id === id).length, 1, 'one card per call');
});

test('Qwen Code\'s own auto mode does not get past the hub: a new file gets a card with its diff; an edit shows old and new text', async () => {
  const folder = makeFolder();
  writeFileSync(join(folder, 'poem.txt'), 'roses are red\nviolets are blue\n');
  // Qwen Code's write_file and edit take absolute paths.
  setup.model.script('write notes', callTool('write_file', { file_path: join(folder, 'notes.txt'), content: 'hello\nworld\n' }), say('Wrote notes.txt.'));
  setup.model.script('fix the poem',
    callTool('read_file', { file_path: join(folder, 'poem.txt') }),
    callTool('edit', { file_path: join(folder, 'poem.txt'), old_string: 'violets are blue', new_string: 'violets are purple' }),
    say('Edited poem.txt.'));

  // In its own "auto" mode Qwen Code writes inside the folder without asking
  // (fixtures/qwen/default_mode.jsonl); with the hub it asks.
  const first = await prompt(folder, 'write notes please');
  const id = pendingCall(first);
  const shown = card(first.events, id);
  assert.equal(shown.kind, 'edit');
  assert.deepEqual(shown.diff, { path: 'notes.txt', old_text: '', new_text: 'hello\nworld\n' }, JSON.stringify(shown));
  assert.equal(shown.tool_name, 'write_file');
  assert.deepEqual(choices(first.events, id), EDIT_CHOICES);
  assert.equal(existsSync(join(folder, 'notes.txt')), false, 'nothing written before the decision');
  await assertAskingMode(folder);

  const session = sessionOf(first.events);
  const rest = await decide(session, { toolId: id, decision: 'approve' });
  assert.equal(last(rest.events).status, 'success', JSON.stringify(rest.events));
  assert.equal(readFileSync(join(folder, 'notes.txt'), 'utf8'), 'hello\nworld\n');

  // An edit of an existing file: the whole file before and after.
  const edit = await prompt(folder, 'fix the poem');
  const editId = pendingCall(edit);
  const editCard = card(edit.events, editId);
  assert.equal(editCard.tool_name, 'edit');
  assert.deepEqual(editCard.diff, { path: 'poem.txt', old_text: 'roses are red\nviolets are blue\n', new_text: 'roses are red\nviolets are purple\n' }, JSON.stringify(editCard));
  assert.equal(readFileSync(join(folder, 'poem.txt'), 'utf8'), 'roses are red\nviolets are blue\n');
  const edited = await decide(session, { toolId: editId, decision: 'approve' });
  assert.equal(last(edited.events).status, 'success', JSON.stringify(edited.events));
  assert.equal(readFileSync(join(folder, 'poem.txt'), 'utf8'), 'roses are red\nviolets are purple\n');
  assert.equal(said(edited.events), 'Edited poem.txt.');

  const all = await sessionEvents(session);
  assert.deepEqual(results(all, id).map((event) => event.status), ['success'], JSON.stringify(toolEvents(all, id)));
  assert.deepEqual(results(all, editId).map((event) => event.status), ['success'], JSON.stringify(toolEvents(all, editId)));
});

test('rejecting a command: the agent ends its turn, nothing runs, one skipped result, and the next prompt is clean', async () => {
  const folder = makeFolder();
  setup.model.script('make rejected.txt', callTool('run_shell_command', { command: 'echo no > rejected.txt', description: 'Write no' }), say('I should not get here.'));
  setup.model.script('what now', say('Second turn answer.'));
  const first = await prompt(folder, 'please make rejected.txt');
  const id = pendingCall(first);
  assert.equal(card(first.events, id).parameters?.command, 'echo no > rejected.txt');
  const session = sessionOf(first.events);

  const rest = await decide(session, { toolId: id, decision: 'reject' });
  assert.equal(rest.status, 200, JSON.stringify(rest.body));
  assert.deepEqual(results(rest.events, id).map((event) => event.status), ['skipped'], JSON.stringify(rest.events));
  assert.equal(last(rest.events).status, 'cancelled', JSON.stringify(rest.events));
  assert.equal(existsSync(join(folder, 'rejected.txt')), false, 'nothing ran');
  assert.equal(asked('I should not get here.').length, 0);

  const next = await prompt(folder, 'what now?');
  assert.equal(next.status, 200, JSON.stringify(next.body));
  assert.equal(last(next.events).status, 'success', JSON.stringify(next.events));
  assert.equal(said(next.events), 'Second turn answer.', 'the new prompt gets its own scripted answer');
  assert.deepEqual(next.events.filter((event) => event.type.startsWith('tool_')), [], 'no card, no result of the old call in the new turn');
  assert.equal(existsSync(join(folder, 'rejected.txt')), false);

  const all = await sessionEvents(session);
  assert.deepEqual(results(all, id).map((event) => event.status), ['skipped'], `one result in the whole session: ${JSON.stringify(toolEvents(all, id))}`);
  // The hub answered Qwen Code's own reject option (not "cancelled", not
  // session/cancel): the model is told the user turned the call down.
  const history = JSON.stringify(asked('what now?').at(-1).request.messages);
  assert.match(history, /Tool \\"run_shell_command\\" was canceled by the user\./, history.slice(-600));
});

test('YOLO: the hub answers for the user; a command and a write run with no card', async () => {
  const folder = makeFolder();
  const on = await setup.hub.api('/api/chat/config', { method: 'POST', body: JSON.stringify({ folderPath: folder, yoloMode: true }) });
  assert.equal(on.body.yoloMode, true);
  setup.model.script('yolo both',
    callTool('run_shell_command', { command: 'echo yolo > y.txt', description: 'Write yolo' }),
    callTool('write_file', { file_path: join(folder, 'z.txt'), content: 'zed\n' }),
    say('Done in YOLO.'));
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
  assert.equal(said(turn.events), 'Done in YOLO.');
});

test('Stop ends a turn cancelled and the next prompt works', async () => {
  const folder = makeFolder();
  setup.model.script('slow work', hang());
  setup.model.script('after the stop', say('Back after the stop.'));
  const waiting = setup.model.hanging();
  const stream = prompt(folder, 'slow work');
  await expect(() => assert.ok(setup.model.hanging() > waiting), { timeout: 30000 });
  const session = (await config(folder)).sessionId;
  const stopped = await setup.hub.stream(`/api/sessions/${session}/cancel`, {});
  assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
  const turn = await stream;
  assert.equal(last(turn.events).status, 'cancelled', JSON.stringify(turn.events));
  await expect(() => assert.equal(setup.model.hanging(), waiting, 'Qwen Code dropped the model request'), { timeout: 10000 });

  const next = await prompt(folder, 'after the stop');
  assert.equal(last(next.events).status, 'success', JSON.stringify(next.events));
  assert.equal(said(next.events), 'Back after the stop.');
});

test('after a hub restart the conversation goes on (session/load), still asking', async () => {
  const folder = makeFolder();
  setup.model.script('remember plum', say('Noted: plum.'));
  setup.model.script('after the restart', say('Still here.'));
  setup.model.script('then write plum.txt', callTool('write_file', { file_path: join(folder, 'plum.txt'), content: 'plum\n' }), say('Wrote plum.txt.'));
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
    const request = asked('after the restart').at(-1);
    assert.ok(JSON.stringify(request.request.messages).includes('remember plum'), 'the new Qwen Code process loaded the session: the model sees the earlier turn');
    assert.ok(JSON.stringify(request.request.messages).includes('Noted: plum.'));
    // The replayed history is not shown again as new events.
    const all = await sessionEvents(session, restarted);
    assert.equal(all.filter((event) => event.type === 'message' && event.role === 'user' && event.content === 'remember plum').length, 1, JSON.stringify(all));
    assert.equal(said(all), 'Noted: plum.Still here.', JSON.stringify(all));

    // Qwen Code forgets its mode in session/load ("auto" again): the hub sets it again.
    const write = await prompt(folder, 'then write plum.txt', restarted);
    const id = pendingCall(write);
    assert.deepEqual(card(write.events, id).diff, { path: 'plum.txt', old_text: '', new_text: 'plum\n' });
    assert.equal(existsSync(join(folder, 'plum.txt')), false);
    await assertAskingMode(folder, restarted);
  } finally {
    await restarted.stop();
  }
});
