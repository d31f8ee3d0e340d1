// The hub driving the real Claude Code over ACP (claude-code-acp, pinned in
// end2end/acp-agents) against a scripted fake of the Anthropic Messages API
// (end2end/fake-anthropic.mjs): its permission requests become the hub's
// cards showing what is decided on (the command, the file's diff, the agent's
// own choices), approve runs the call once, reject answers reject_once and the
// next prompt is clean, YOLO answers by itself, Stop ends the turn, a restarted
// hub goes on with the conversation, and Claude Code's own modes cannot take
// the decisions away from the hub.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { last, sessionOf, results, card, pendingCall, sessionEvents as eventsOf } from '../acp-events.mjs';
import { startHub, makeFolder } from '../hub.mjs';
import { startFakeAnthropic, claudeAgent, bash, read, write, edit, callTool, say, think, hang } from '../fake-anthropic.mjs';
import { hubWithAgent } from '../setup.mjs';

const setup = hubWithAgent(startFakeAnthropic, claudeAgent);

const prompt = (folder, message, on = setup.hub) => on.stream('/api/chat/prompt', { folderPath: folder, message });
const decide = (session, body, on = setup.hub) => on.stream(`/api/sessions/${session}/approve`, body);
const show = (events) => JSON.stringify(events, null, 1);


const resultsOf = results;


/** Claude Code's own answers to a permission request, as the card lists them. */
const CLAUDE_CHOICES = [
  { id: 'allow', name: 'Allow', kind: 'allow_once' },
  { id: 'allow_always', name: 'Always Allow', kind: 'allow_always' },
  { id: 'reject', name: 'Reject', kind: 'reject_once' },
];
const byId = (choices) => [...(choices ?? [])].sort((a, b) => a.id.localeCompare(b.id));

/** Every event of the session so far (NDJSON). */
const allEvents = (session, on = setup.hub) => eventsOf(on, session);

/** The tool_result Claude Code sent the model for a call, in its latest main-loop request. */
function resultSentToModel(toolUseId) {
  const request = setup.model.turns().findLast((r) => JSON.stringify(r.request.messages).includes(toolUseId));
  const blocks = (request?.request.messages ?? []).flatMap((m) => (Array.isArray(m.content) ? m.content : []));
  return blocks.find((block) => block.type === 'tool_result' && block.tool_use_id === toolUseId);
}

test('a command becomes a card with the command, its real tool name and the agent\'s choices; approving runs it once', async () => {
  const folder = makeFolder();
  setup.model.script('make from_agent.txt',
    think('The user wants a file.', bash('echo hi > from_agent.txt', 'Write hi to a file')),
    say('Made from_agent.txt.'));
  const first = await prompt(folder, 'please make from_agent.txt');
  const id = pendingCall(first);
  const call = card(first.events, id);
  assert.ok(call, `the pending call was announced: ${show(first.events)}`);
  assert.equal(call.tool_name, 'Bash', 'the real tool name from _meta.claudeCode.toolName');
  assert.equal(call.kind, 'execute');
  assert.equal(call.parameters.command, 'echo hi > from_agent.txt', `the card shows the command: ${JSON.stringify(call)}`);
  assert.deepEqual(byId(call.choices), CLAUDE_CHOICES, `the agent's own options: ${JSON.stringify(call)}`);
  assert.ok(first.events.some((event) => event.type === 'thought' && event.content.includes('The user wants a file.')));
  assert.equal(existsSync(join(folder, 'from_agent.txt')), false, 'nothing runs before the decision');

  const session = sessionOf(first.events);
  const detail = await setup.hub.api(`/api/sessions/${session}`);
  assert.equal(detail.body.status, 'waiting_approval');
  assert.equal(detail.body.pendingApproval.toolId, id);

  const rest = await decide(session, { toolId: id, decision: 'approve' });
  assert.equal(rest.status, 200, JSON.stringify(rest.body));
  assert.equal(last(rest.events).status, 'success', show(rest.events));
  assert.ok(rest.events.some((event) => event.type === 'message' && event.content.includes('Made from_agent.txt.')));
  assert.equal(readFileSync(join(folder, 'from_agent.txt'), 'utf8'), 'hi\n');
  const results = resultsOf(await allEvents(session), id);
  assert.equal(results.length, 1, `exactly one result for the call: ${JSON.stringify(results)}`);
  assert.equal(results[0].status, 'success');
});

test('a new file and an edit: each card shows the diff relative to the folder; approving writes it', async () => {
  const folder = makeFolder();
  setup.model.script('write notes.txt', write(join(folder, 'notes.txt'), 'hello\nworld\n'), say('Wrote notes.txt.'));
  const first = await prompt(folder, 'write notes.txt');
  const writeId = pendingCall(first);
  const writeCard = card(first.events, writeId);
  assert.equal(writeCard.tool_name, 'Write');
  assert.equal(writeCard.kind, 'edit');
  assert.deepEqual(writeCard.diff, { path: 'notes.txt', old_text: '', new_text: 'hello\nworld\n' }, JSON.stringify(writeCard));
  assert.deepEqual(byId(writeCard.choices), CLAUDE_CHOICES);
  assert.equal(existsSync(join(folder, 'notes.txt')), false, 'nothing is written before the decision');
  const session = sessionOf(first.events);
  const written = await decide(session, { toolId: writeId, decision: 'approve' });
  assert.equal(last(written.events).status, 'success', show(written.events));
  assert.equal(readFileSync(join(folder, 'notes.txt'), 'utf8'), 'hello\nworld\n');

  // Claude Code edits only a file it has read in the session: Read (which does not ask, and reads
  // through the hub), then Edit.
  writeFileSync(join(folder, 'greeting.txt'), 'hello\nworld\n');
  setup.model.script('edit greeting.txt', read(join(folder, 'greeting.txt')),
    edit(join(folder, 'greeting.txt'), 'world', 'there'), say('Edited greeting.txt.'));
  const second = await prompt(folder, 'edit greeting.txt');
  const editId = pendingCall(second);
  const editCard = card(second.events, editId);
  assert.equal(editCard.tool_name, 'Edit');
  assert.equal(editCard.kind, 'edit');
  assert.equal(editCard.diff?.path, 'greeting.txt', JSON.stringify(editCard));
  assert.match(editCard.diff.old_text, /world/);
  assert.doesNotMatch(editCard.diff.old_text, /there/);
  assert.match(editCard.diff.new_text, /there/);
  assert.doesNotMatch(editCard.diff.new_text, /world/);
  const edited = await decide(session, { toolId: editId, decision: 'approve' });
  assert.equal(last(edited.events).status, 'success', show(edited.events));
  assert.equal(readFileSync(join(folder, 'greeting.txt'), 'utf8'), 'hello\nthere\n');
  const events = await allEvents(session);
  assert.equal(resultsOf(events, writeId).length, 1);
  assert.equal(resultsOf(events, editId).length, 1);
});

test('reject: nothing runs, the call gets one skipped result, and the next prompt is clean', async () => {
  const folder = makeFolder();
  setup.model.script('make rejected.txt', bash('echo no > rejected.txt', 'Write a file'), say('I ran it anyway?'));
  setup.model.script('say something else', say('Something else.'));
  const first = await prompt(folder, 'make rejected.txt');
  const id = pendingCall(first);
  assert.equal(card(first.events, id).parameters.command, 'echo no > rejected.txt');
  const session = sessionOf(first.events);

  const rest = await decide(session, { toolId: id, decision: 'reject' });
  assert.equal(rest.status, 200, JSON.stringify(rest.body));
  const skipped = resultsOf(rest.events, id);
  assert.equal(skipped.length, 1, show(rest.events));
  assert.equal(skipped[0].status, 'skipped');
  assert.equal(last(rest.events).type, 'result');
  assert.ok(!['waiting_approval', 'error'].includes(last(rest.events).status), show(rest.events));
  assert.ok(!rest.events.some((event) => event.type === 'message' && event.content.includes('anyway')),
    'the agent ended its turn: the model was not asked again');
  assert.equal((await setup.hub.api(`/api/sessions/${session}`)).body.status, 'idle');

  const next = await prompt(folder, 'say something else');
  assert.equal(next.status, 200, JSON.stringify(next.body));
  assert.equal(last(next.events).status, 'success', show(next.events));
  assert.ok(next.events.some((event) => event.type === 'message' && event.content.includes('Something else.')), show(next.events));
  assert.ok(!next.events.some((event) => ['tool_use', 'tool_update', 'tool_result'].includes(event.type)),
    `no card and nothing of the old call in the new turn: ${show(next.events)}`);
  // The hub answered reject_once (no cancel cut it short): the model was told so.
  assert.equal(resultSentToModel(id)?.content, 'User refused permission to run tool', JSON.stringify(resultSentToModel(id)));
  assert.equal(existsSync(join(folder, 'rejected.txt')), false);
  // After the grace a late cancel would come in: still one result.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const results = resultsOf(await allEvents(session), id);
  assert.equal(results.length, 1, `one result across the session: ${JSON.stringify(results)}`);
  assert.equal(results[0].status, 'skipped');
});

test('YOLO: the hub allows the call itself and the turn runs through without a card', async () => {
  const folder = makeFolder();
  const on = await setup.hub.api('/api/chat/config', { method: 'POST', body: JSON.stringify({ folderPath: folder, yoloMode: true }) });
  assert.equal(on.body.yoloMode, true);
  setup.model.script('yolo file', bash('echo yolo > y.txt', 'Write it'), say('Done in YOLO.'));
  const turn = await prompt(folder, 'yolo file');
  assert.equal(last(turn.events).status, 'success', show(turn.events));
  const tools = turn.events.filter((event) => event.type.startsWith('tool'));
  assert.equal(tools[0]?.type, 'tool_use', show(turn.events));
  assert.equal(last(tools).type, 'tool_result');
  assert.equal(last(tools).status, 'success');
  assert.equal(resultsOf(turn.events, tools[0].tool_id).length, 1);
  assert.equal(card(turn.events, tools[0].tool_id).parameters.command, 'echo yolo > y.txt');
  assert.equal(readFileSync(join(folder, 'y.txt'), 'utf8'), 'yolo\n');
});

test('Stop ends a turn waiting on the model as cancelled; the next prompt works', async () => {
  const folder = makeFolder();
  setup.model.script('slow work', hang());
  setup.model.script('after the stop', say('Still here.'));
  const { sessionId: session } = (await setup.hub.api(`/api/chat/config?folderPath=${encodeURIComponent(folder)}`)).body;
  const hanging = setup.model.hanging();
  const stream = prompt(folder, 'slow work');
  await expect(() => assert.ok(setup.model.hanging() > hanging, 'the model request is open'), { timeout: 30000 });
  const stop = await setup.hub.stream(`/api/sessions/${session}/cancel`, {});
  assert.equal(stop.status, 200, JSON.stringify(stop.body));
  const stopped = await stream;
  assert.equal(sessionOf(stopped.events), session);
  assert.equal(last(stopped.events).status, 'cancelled', show(stopped.events));
  await expect(() => assert.equal(setup.model.hanging(), hanging, 'the model request was closed'), { timeout: 10000 });

  const next = await prompt(folder, 'after the stop');
  assert.equal(last(next.events).status, 'success', show(next.events));
  assert.ok(next.events.some((event) => event.type === 'message' && event.content.includes('Still here.')), show(next.events));
});

/** Whether Claude Code's saved conversations (its session files) hold `text`. */
function transcriptsHold(text) {
  const projects = join(setup.agent.config, 'projects');
  if (!existsSync(projects)) return false;
  return readdirSync(projects, { recursive: true }).filter((file) => file.endsWith('.jsonl'))
    .some((file) => readFileSync(join(projects, file), 'utf8').includes(text));
}

// Claude Code writes a turn to its session file about 100 ms after the turn
// ended, and a SIGTERM in between loses it (session/load then fails: "Query
// closed before response received"). A real restart is rarely that quick: the
// hub stops once the turn is saved.
test('after a hub restart the conversation goes on (session/load) and still asks', async () => {
  const folder = makeFolder();
  setup.model.script('remember plum', say('Noted: plum.'));
  setup.model.script('after the restart', bash('touch plum.txt', 'Make plum'), say('Touched.'));
  const own = await startHub(setup.agent.args, setup.agent.env);
  let session;
  try {
    const first = await prompt(folder, 'remember plum', own);
    assert.equal(last(first.events).status, 'success', show(first.events));
    session = sessionOf(first.events);
    await expect(() => assert.ok(transcriptsHold('Noted: plum.'), 'Claude Code saved the turn'), { timeout: 10000 });
  } finally {
    await own.stop();
  }
  const restarted = await startHub(setup.agent.args, setup.agent.env, { dataDir: own.dataDir });
  try {
    const turn = await prompt(folder, 'after the restart', restarted);
    assert.equal(sessionOf(turn.events), session, 'the same session of the hub');
    assert.ok(!turn.events.some((event) => event.type === 'error'), show(turn.events));
    const request = setup.model.turns().findLast((r) => JSON.stringify(r.request.messages).includes('after the restart'));
    assert.ok(JSON.stringify(request.request.messages).includes('remember plum'),
      'the new agent process loaded the session: the model sees the earlier turn');
    const id = pendingCall(turn);
    assert.equal(card(turn.events, id).parameters.command, 'touch plum.txt');
    const rest = await decide(session, { toolId: id, decision: 'approve' }, restarted);
    assert.equal(last(rest.events).status, 'success', show(rest.events));
    assert.ok(existsSync(join(folder, 'plum.txt')));
  } finally {
    await restarted.stop();
  }
});

test("Claude Code's own modes cannot take the decision away from the hub", async () => {
  // Its own settings ask for a mode that skips asking for edits…
  const own = claudeAgent(setup.model, { settings: { permissions: { defaultMode: 'acceptEdits' } } });
  const folder = makeFolder();
  mkdirSync(join(folder, '.claude'));
  writeFileSync(join(folder, '.claude', 'settings.json'), JSON.stringify({ permissions: { defaultMode: 'acceptEdits' } }));
  const modeHub = await startHub(own.args, own.env);
  try {
    setup.model.script('write mine.txt', write(join(folder, 'mine.txt'), 'mine\n'), say('Wrote mine.txt.'));
    const first = await prompt(folder, 'write mine.txt', modeHub);
    const id = pendingCall(first);
    assert.deepEqual(card(first.events, id).diff, { path: 'mine.txt', old_text: '', new_text: 'mine\n' });
    assert.equal(existsSync(join(folder, 'mine.txt')), false);
    const config = (await modeHub.api(`/api/chat/config?folderPath=${encodeURIComponent(folder)}`)).body;
    const modes = config.agentModes;
    assert.ok(modes, `the agent's modes are known: ${JSON.stringify(config)}`);
    assert.equal(modes.currentModeId, 'default');
    assert.equal(modes.chosenByUser, false);
    const asks = Object.fromEntries(modes.modes.map((mode) => [mode.id, mode.asks]));
    assert.equal(asks.default, true, JSON.stringify(modes));
    assert.equal(asks.acceptEdits, false, JSON.stringify(modes));
    assert.equal(asks.bypassPermissions, false, JSON.stringify(modes));
    assert.equal(modes.modes.find((mode) => mode.id === 'acceptEdits').name, 'Accept Edits');
    const session = sessionOf(first.events);
    const rejected = await decide(session, { toolId: id, decision: 'reject' }, modeHub);
    assert.equal(resultsOf(rejected.events, id)[0]?.status, 'skipped', show(rejected.events));
    assert.equal(existsSync(join(folder, 'mine.txt')), false);

    // …the agent switches itself into plan mode, and out of it with its own
    // "Yes, and auto-accept edits": picked by the user on the card, on purpose,
    // so it holds, and the page shows it as a mode that skips asking.
    setup.model.script('plan then write', callTool('EnterPlanMode', {}), callTool('ExitPlanMode', { plan: 'Write plan.txt' }),
      write(join(folder, 'plan.txt'), 'planned\n'), say('Planned and wrote.'));
    const planning = await prompt(folder, 'plan then write', modeHub);
    const exitId = pendingCall(planning);
    const exitCard = card(planning.events, exitId);
    assert.deepEqual(byId(exitCard.choices), [
      { id: 'acceptEdits', name: 'Yes, and auto-accept edits', kind: 'allow_always' },
      { id: 'default', name: 'Yes, and manually approve edits', kind: 'allow_once' },
      { id: 'plan', name: 'No, keep planning', kind: 'reject_once' },
    ], JSON.stringify(exitCard));
    const leave = await decide(session, { toolId: exitId, decision: 'agent_option', optionId: 'acceptEdits' }, modeHub);
    assert.equal(leave.status, 200, JSON.stringify(leave.body));
    assert.equal(last(leave.events).status, 'success', show(leave.events));
    assert.ok(existsSync(join(folder, 'plan.txt')), 'in the mode the user picked, the write ran without a card');
    const picked = (await modeHub.api(`/api/chat/config?folderPath=${encodeURIComponent(folder)}`)).body.agentModes;
    assert.equal(picked.currentModeId, 'acceptEdits', JSON.stringify(picked));
    assert.equal(picked.chosenByUser, true, JSON.stringify(picked));

    // The user puts it back in a mode that asks (the header's mode picker). Claude Code's
    // adapter remembered its own session rule allowing writes in acceptEdits, so it no
    // longer asks: the hub, which does the write, refuses one nobody approved.
    const setMode = (modeId) => modeHub.api(`/api/sessions/${session}/mode`, { method: 'POST', body: JSON.stringify({ modeId }) });
    const back = await setMode('default');
    assert.equal(back.status, 200, JSON.stringify(back.body));
    assert.equal(back.body.agentModes.currentModeId, 'default', JSON.stringify(back.body));
    const unknown = await setMode('sideways');
    assert.equal(unknown.status, 400, JSON.stringify(unknown.body));
    assert.match(unknown.body.message, /offers no mode 'sideways'/);
    setup.model.script('write again', write(join(folder, 'again.txt'), 'again\n'), say('Tried again.txt.'));
    const again = await prompt(folder, 'write again', modeHub);
    const againId = again.events.find((event) => event.type === 'tool_use')?.tool_id;
    const refused = resultsOf(again.events, againId)[0];
    assert.equal(refused?.status, 'error', show(again.events));
    assert.match(refused.error.message, /without approval/);
    assert.equal(existsSync(join(folder, 'again.txt')), false, 'nothing the hub did not judge is written');
  } finally {
    await modeHub.stop();
  }
});
