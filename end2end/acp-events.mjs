// Reading a hub's event stream in the ACP agents' tests (acp_claude, acp_codex,
// acp_qwen): the call as its card shows it, the agent's choices, a paused
// turn's pending call, and the whole session's events.
import assert from 'node:assert/strict';

export const last = (events) => events.at(-1);
export const sessionOf = (events) => events.find((event) => event.type === 'init')?.session_id;
export const toolEvents = (events, id) => events.filter((event) => event.type.startsWith('tool_') && event.tool_id === id);
export const results = (events, id) => events.filter((event) => event.type === 'tool_result' && event.tool_id === id);
/** What the agent said in `events` (its message chunks joined). */
export const said = (events) =>
  events.filter((event) => event.type === 'message' && event.role === 'assistant').map((event) => event.content).join('');

/** What the card shows for `id`: its latest `tool_use` or `tool_update`. */
export function card(events, id) {
  const shown = events.findLast((event) => (event.type === 'tool_use' || event.type === 'tool_update') && event.tool_id === id);
  assert.ok(shown, `a tool_use or tool_update for ${id} in ${JSON.stringify(events)}`);
  return shown;
}

/** The agent's answers offered for `id` (the latest tool_update that carries them). */
export function choices(events, id) {
  return events.findLast((event) => event.type === 'tool_update' && event.tool_id === id && event.choices)?.choices;
}

/** A turn that paused on one card: the pending call's id. */
export function pendingCall(turn) {
  assert.equal(turn.status, 200, JSON.stringify(turn.body));
  const end = last(turn.events);
  assert.equal(end.type, 'result', JSON.stringify(turn.events));
  assert.equal(end.status, 'waiting_approval', JSON.stringify(turn.events));
  assert.equal(end.pending?.length, 1, JSON.stringify(end));
  return end.pending[0];
}

/** Every event the session ever had (`GET /api/sessions/{id}/events?after=0`, NDJSON). */
export async function sessionEvents(hub, session) {
  const response = await fetch(`${hub.base}/api/sessions/${session}/events?after=0`, {
    headers: { Authorization: `Bearer ${hub.token}` },
  });
  assert.equal(response.status, 200);
  return (await response.text()).trim().split('\n').filter(Boolean).map((line) => JSON.parse(line));
}
