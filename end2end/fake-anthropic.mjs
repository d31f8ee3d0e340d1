// A scripted Anthropic Messages API for end-to-end tests with the real Claude
// Code (through claude-code-acp): `POST /v1/messages` answered in the real wire
// format (server-sent events message_start, content_block_start/delta/stop,
// message_delta, message_stop when `stream` is set; one JSON message when not),
// and `POST /v1/messages/count_tokens`. Like fake-gemini.mjs it keeps no state
// per conversation: a main-loop request (one that offers the agent's tools) is
// answered by the latest scripted prompt in its user turns and by how many
// model turns followed it, so a restarted or reloaded agent gets the same
// answers. Requests without tools are Claude Code's side requests (titles,
// topics, a command's prefix…): answered sensibly so the agent never stalls.
import { createServer } from 'node:http';
import { join } from 'node:path';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { ROOT } from './hub.mjs';

export const say = (text) => ({ blocks: [{ type: 'text', text }] });
/** A reply that thinks first, then does `reply`. */
export const think = (thought, reply) => ({ blocks: [{ type: 'thinking', thinking: thought }, ...reply.blocks] });
/** A call of one of Claude Code's own tools, e.g. `callTool('EnterPlanMode', {})`. */
export const callTool = (name, input) => ({ blocks: [{ type: 'tool_use', name, input }] });
// The hub serves Claude Code's writes and terminals (ACP's `fs.writeTextFile` and
// `terminal`): its Bash, Write and Edit are then the adapter's `mcp__acp__*` tools.
export const bash = (command, description = 'Run a command') =>
  callTool('mcp__acp__Bash', { command, description, timeout: 120000 });
/** Claude Code's Read, Write and Edit take an absolute `file_path`. */
export const read = (filePath) => callTool('Read', { file_path: filePath });
export const write = (filePath, content) => callTool('mcp__acp__Write', { file_path: filePath, content });
export const edit = (filePath, oldString, newString) =>
  callTool('mcp__acp__Edit', { file_path: filePath, old_string: oldString, new_string: newString });
/** A reply that never comes: the request stays open until the client goes away. */
export const hang = () => ({ hang: true });

const MODEL = 'claude-sonnet-4-5-20250929';
let calls = 0;
/** A tool-use id unique across fakes and runs (a loaded session keeps old ones). */
const toolUseId = () => `toolu_fake${(++calls).toString().padStart(3, '0')}${randomBytes(6).toString('hex')}`;

/**
 * Starts the fake. `script(prompt, ...replies)`: after the user text `prompt`,
 * the n-th model turn gets `replies[n]`; past the end, a plain "Done." ends the turn.
 */
export async function startFakeAnthropic() {
  const scripts = new Map();
  const requests = [];
  let hanging = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      const path = req.url.split('?')[0];
      let request = {};
      try { request = body ? JSON.parse(body) : {}; } catch { /* answered below */ }
      requests.push({ url: req.url, method: req.method, request });
      if (req.method === 'POST' && path === '/v1/messages/count_tokens') {
        json(res, 200, { input_tokens: Math.max(1, Math.ceil(body.length / 4)) });
        return;
      }
      if (req.method !== 'POST' || path !== '/v1/messages') {
        json(res, 404, { type: 'error', error: { type: 'not_found_error', message: `no such route ${req.method} ${req.url}` } });
        return;
      }
      const main = isMainLoop(request);
      const reply = main ? pick(scripts, request.messages ?? []) : sideReply(request);
      if (reply.hang) {
        hanging += 1;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.on('close', () => { hanging -= 1; });
        return;
      }
      const blocks = reply.blocks.map((block) => (block.type === 'tool_use' ? { ...block, id: toolUseId() } : block));
      const message = {
        id: `msg_fake${randomBytes(8).toString('hex')}`,
        type: 'message',
        role: 'assistant',
        model: request.model ?? MODEL,
        content: blocks.map(finished),
        stop_reason: blocks.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      };
      if (!request.stream) {
        json(res, 200, message);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.end(sse(message, blocks));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${server.address().port}`,
    script: (prompt, ...replies) => scripts.set(prompt, replies),
    requests,
    /** The main-loop requests (the agent's own turns, not its side requests). */
    turns: () => requests.filter((r) => r.url.startsWith('/v1/messages') && !r.url.includes('count_tokens') && isMainLoop(r.request)),
    /** How many requests wait on a `hang()` reply now. */
    hanging: () => hanging,
    stop: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

function json(res, status, value) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

/** A block as it stands in the finished message. */
function finished(block) {
  if (block.type === 'thinking') return { type: 'thinking', thinking: block.thinking, signature: signature() };
  return block;
}

const signature = () => randomBytes(24).toString('base64');

/** The message as the real API streams it. */
function sse(message, blocks) {
  const events = [];
  const event = (type, data) => events.push(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  event('message_start', { message: { ...message, content: [], stop_reason: null, usage: { ...message.usage, output_tokens: 1 } } });
  blocks.forEach((block, index) => {
    if (block.type === 'text') {
      event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      event('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } });
    } else if (block.type === 'thinking') {
      event('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      event('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: block.thinking } });
      event('content_block_delta', { index, delta: { type: 'signature_delta', signature: signature() } });
    } else {
      event('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } });
      event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
    }
    event('content_block_stop', { index });
    if (index === 0) events.push(`event: ping\ndata: ${JSON.stringify({ type: 'ping' })}\n\n`);
  });
  event('message_delta', { delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { output_tokens: 5 } });
  event('message_stop', {});
  return events.join('');
}

/** The agent's own turn: it offers its tools (side requests offer none). */
function isMainLoop(request) {
  // Its own Bash and Write, or the adapter's that run through the hub (`mcp__acp__Bash`).
  const main = ['Bash', 'Write', 'mcp__acp__Bash', 'mcp__acp__Write'];
  return Array.isArray(request.tools) && request.tools.some((tool) => main.includes(tool.name));
}

const textOf = (content) => (typeof content === 'string' ? content
  : (content ?? []).filter((block) => block.type === 'text').map((block) => block.text).join('\n'));

/**
 * The reply for a conversation: the scripted prompt found latest in its user
 * turns, and the model turns since that user turn.
 */
function pick(scripts, messages) {
  let best = null;
  messages.forEach((message, at) => {
    if (message.role !== 'user') return;
    const text = textOf(message.content);
    for (const [key, replies] of scripts) {
      const pos = text.lastIndexOf(key);
      if (pos >= 0 && (best === null || at > best.at || (at === best.at && pos > best.pos))) best = { at, pos, replies };
    }
  });
  if (!best) return say('Done.');
  const turns = messages.slice(best.at + 1).filter((message) => message.role === 'assistant').length;
  return best.replies[turns] ?? say('Done.');
}

/** Claude Code's side requests: a title, a topic check, a command's prefix, a summary. */
function sideReply(request) {
  const system = textOf(Array.isArray(request.system) ? request.system : [{ type: 'text', text: request.system ?? '' }]);
  const asked = textOf(request.messages?.at(-1)?.content);
  if (/Extract any file paths/i.test(system)) return say('<filepaths>\n</filepaths>');
  if (/command prefix|policy_spec/i.test(system + asked)) return say('none');
  if (/isNewTopic|new conversation topic/i.test(system + asked)) return say('{"isNewTopic": false, "title": null}');
  if (/title/i.test(system)) return say('{"title": "Fake session"}');
  return say('Done.');
}

/**
 * How the hub starts claude-code-acp against this fake: the `--acp-command` and
 * the environment. Claude Code gets a home and a config dir of its own
 * (`settings` goes to its user settings.json), talks only to the fake, and sends
 * no telemetry, error reports or update checks. Running as root, Claude Code
 * refuses to start when claude-code-acp offers it `bypassPermissions` (it does
 * whenever IS_SANDBOX is set at all) unless IS_SANDBOX is exactly "1": so it is
 * "1" here (the mode is then offered, as for a user who is not root).
 */
export function claudeAgent(fake, { settings = {} } = {}) {
  const home = mkdtempSync(join(tmpdir(), 'claude-home-'));
  const config = join(home, '.claude');
  mkdirSync(config, { recursive: true });
  writeFileSync(join(config, 'settings.json'), JSON.stringify(settings));
  const bin = join(ROOT, 'end2end/acp-agents/node_modules/.bin/claude-code-acp');
  return passEnv({
    home,
    config,
    args: ['--agent', 'acp', '--acp-command', bin],
    env: {
      HOME: home,
      CLAUDE_CONFIG_DIR: config,
      ANTHROPIC_BASE_URL: fake.baseUrl,
      ANTHROPIC_API_KEY: 'sk-ant-fake-key',
      ANTHROPIC_MODEL: MODEL,
      ANTHROPIC_SMALL_FAST_MODEL: 'claude-haiku-4-5-20251001',
      IS_SANDBOX: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      CLAUDE_CODE_ENABLE_TELEMETRY: '0',
    },
  });
}

/** The hub gives an ACP agent PATH, HOME and the like, and only the other
 * variables `--acp-env` names (issue 24): every one this agent is started with. */
function passEnv(agent) {
  return { ...agent, args: [...agent.args, '--acp-env', Object.keys(agent.env).join(',')] };
}
