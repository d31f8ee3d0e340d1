// A scripted OpenAI Responses API for end-to-end tests with the real Codex
// (codex-acp): `POST /v1/responses` with `stream: true`, answered with
// server-sent events in the real wire format (response.created,
// response.output_item.added, response.output_text.delta,
// response.function_call_arguments.delta, response.custom_tool_call_input.delta,
// response.output_item.done, response.completed). Like fake-gemini.mjs it keeps
// no state per conversation: the reply is picked by the last user text (the
// prompt) and by how many model turns followed it, so a restarted or reloaded
// agent gets the same answers.
import { createServer } from 'node:http';
import { join } from 'node:path';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { ROOT } from './hub.mjs';

/** A reply that says `text` and ends the turn. */
export const say = (text) => ({ items: [{ type: 'message', text }] });
/** A reply that thinks first (a reasoning summary), then does `reply`. */
export const think = (thought, reply) => ({ items: [{ type: 'reasoning', text: thought }, ...reply.items] });
/** A function tool call, e.g. `callTool('exec_command', { cmd: 'ls' })`. */
export const callTool = (name, args) => ({ items: [{ type: 'function_call', name, arguments: JSON.stringify(args) }] });
/** Codex's shell tool (gpt-5.x models: unified exec): `cmd` is one shell command line. */
export const shell = (cmd, more = {}) => callTool('exec_command', { cmd, ...more });
/** Codex's freeform `apply_patch` tool (a custom tool call whose input is the patch text). */
export const applyPatch = (patch) => ({ items: [{ type: 'custom_tool_call', name: 'apply_patch', input: patch }] });
/** A patch adding the file `path` (relative to the folder) with `content`. */
export const writeFile = (path, content) => applyPatch(
  `*** Begin Patch\n*** Add File: ${path}\n${lines(content).map((line) => `+${line}`).join('\n')}\n*** End Patch\n`);
/** A patch replacing the lines `oldText` by `newText` in the existing file `path`. */
export const editFile = (path, oldText, newText) => applyPatch(
  `*** Begin Patch\n*** Update File: ${path}\n@@\n${lines(oldText).map((line) => `-${line}`).join('\n')}\n`
  + `${lines(newText).map((line) => `+${line}`).join('\n')}\n*** End Patch\n`);
/** A reply that never comes: the request stays open until the client goes away. */
export const hang = () => ({ hang: true });

const lines = (text) => text.replace(/\n$/, '').split('\n');

/**
 * Starts the fake. `script(prompt, ...replies)`: after the user text `prompt`,
 * the n-th model turn gets `replies[n]`; past the end (and for anything
 * unscripted) a plain "Done." ends the turn.
 */
export async function startFakeResponses() {
  const scripts = new Map();
  const requests = [];
  let hanging = 0;
  let nextId = 1;
  const id = (prefix) => `${prefix}_${String(nextId++).padStart(6, '0')}`;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      if (req.method === 'GET' && /^\/v1\/models\b/.test(req.url)) {
        // Codex may ask which models there are: none beyond its own catalog.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [], models: [] }));
        return;
      }
      if (req.method !== 'POST' || !/^\/v1\/responses\b/.test(req.url)) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no such route ${req.method} ${req.url}`, type: 'invalid_request_error' } }));
        return;
      }
      let request;
      try {
        request = JSON.parse(body);
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'body is not JSON', type: 'invalid_request_error' } }));
        return;
      }
      requests.push({ url: req.url, headers: req.headers, request });
      const reply = pick(scripts, request.input ?? []);
      const responseId = id('resp');
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const send = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      send('response.created', { response: { id: responseId, object: 'response', status: 'in_progress', model: request.model, output: [] } });
      if (reply.hang) {
        hanging += 1;
        res.on('close', () => { hanging -= 1; });
        return;
      }
      const output = reply.items.map((item, index) => stream(send, item, index, id));
      send('response.completed', {
        response: {
          id: responseId, object: 'response', status: 'completed', model: request.model, output,
          usage: {
            input_tokens: 10, input_tokens_details: { cached_tokens: 0 },
            output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15,
          },
        },
      });
      res.end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${server.address().port}/v1`,
    script: (prompt, ...replies) => scripts.set(prompt, replies),
    requests,
    /** How many requests wait on a `hang()` reply now. */
    hanging: () => hanging,
    stop: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

/** Streams one output item the way the real API does; returns the finished item. */
function stream(send, item, output_index, id) {
  if (item.type === 'message') {
    const item_id = id('msg');
    const done = { id: item_id, type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: item.text, annotations: [] }] };
    send('response.output_item.added', { output_index, item: { ...done, status: 'in_progress', content: [] } });
    send('response.content_part.added', { item_id, output_index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
    for (const delta of chunks(item.text)) send('response.output_text.delta', { item_id, output_index, content_index: 0, delta });
    send('response.output_text.done', { item_id, output_index, content_index: 0, text: item.text });
    send('response.content_part.done', { item_id, output_index, content_index: 0, part: done.content[0] });
    send('response.output_item.done', { output_index, item: done });
    return done;
  }
  if (item.type === 'reasoning') {
    const item_id = id('rs');
    const done = { id: item_id, type: 'reasoning', summary: [{ type: 'summary_text', text: item.text }] };
    send('response.output_item.added', { output_index, item: { ...done, summary: [] } });
    send('response.reasoning_summary_part.added', { item_id, output_index, summary_index: 0, part: { type: 'summary_text', text: '' } });
    for (const delta of chunks(item.text)) send('response.reasoning_summary_text.delta', { item_id, output_index, summary_index: 0, delta });
    send('response.reasoning_summary_text.done', { item_id, output_index, summary_index: 0, text: item.text });
    send('response.reasoning_summary_part.done', { item_id, output_index, summary_index: 0, part: done.summary[0] });
    send('response.output_item.done', { output_index, item: done });
    return done;
  }
  if (item.type === 'function_call') {
    const item_id = id('fc');
    const done = { id: item_id, type: 'function_call', status: 'completed', call_id: id('call'), name: item.name, arguments: item.arguments };
    send('response.output_item.added', { output_index, item: { ...done, status: 'in_progress', arguments: '' } });
    for (const delta of chunks(item.arguments)) send('response.function_call_arguments.delta', { item_id, output_index, delta });
    send('response.function_call_arguments.done', { item_id, output_index, arguments: item.arguments });
    send('response.output_item.done', { output_index, item: done });
    return done;
  }
  if (item.type === 'custom_tool_call') {
    const item_id = id('ctc');
    const done = { id: item_id, type: 'custom_tool_call', status: 'completed', call_id: id('call'), name: item.name, input: item.input };
    send('response.output_item.added', { output_index, item: { ...done, status: 'in_progress', input: '' } });
    for (const delta of chunks(item.input)) send('response.custom_tool_call_input.delta', { item_id, output_index, delta });
    send('response.custom_tool_call_input.done', { item_id, output_index, input: item.input });
    send('response.output_item.done', { output_index, item: done });
    return done;
  }
  throw new Error(`fake-openai-responses: unknown item ${item.type}`);
}

/** Text in a few pieces, as a real stream sends it. */
function chunks(text) {
  const size = Math.max(1, Math.ceil(text.length / 3));
  const out = [];
  for (let at = 0; at < text.length; at += size) out.push(text.slice(at, at + size));
  return out.length ? out : [''];
}

const OUTPUTS = new Set(['function_call_output', 'custom_tool_call_output']);

/** The text of a user message the user typed (not Codex's own context blocks). */
function userText(item) {
  if (item.type !== 'message' || item.role !== 'user' || !Array.isArray(item.content)) return null;
  const text = item.content.map((part) => (part.type === 'input_text' ? part.text : '')).join('');
  return /^\s*</.test(text) ? null : text;
}

/** The reply for a conversation: by its last user text and the model turns since. */
function pick(scripts, input) {
  const lastUser = input.findLastIndex((item) => userText(item) !== null);
  const prompt = lastUser < 0 ? '' : userText(input[lastUser]);
  // A model turn that called tools ends where their outputs come back.
  const after = input.slice(lastUser + 1);
  const turns = after.filter((item, i) => OUTPUTS.has(item.type) && !OUTPUTS.has(after[i + 1]?.type)).length;
  let best = null;
  for (const [key, replies] of scripts) {
    const at = prompt.lastIndexOf(key);
    if (at >= 0 && (best === null || at > best.at)) best = { at, replies };
  }
  return best?.replies[turns] ?? say('Done.');
}

/** codex-acp's native binary (the npm wrapper only starts it). */
export const CODEX_ACP = join(ROOT, 'end2end/acp-agents/node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp');

/**
 * How the hub starts codex-acp against this fake: the `--acp-command` and the
 * environment. Everything Codex needs is in an isolated `CODEX_HOME`'s
 * config.toml (the provider, its key, the model; no update check, no
 * analytics, no retries that would slow a failure down); `CODEX_HOME` is no hub
 * variable, so it reaches the agent without `--acp-env`.
 * `options.model` picks the model (default gpt-5.4-mini: exec_command and the
 * freeform apply_patch); `options.config` adds raw TOML lines (top-level keys, or tables of their own).
 */
export function codexAgent(fake, options = {}) {
  const home = mkdtempSync(join(tmpdir(), 'codex-home-'));
  writeFileSync(join(home, 'config.toml'), codexConfig(fake, options));
  return {
    home,
    args: ['--agent', 'acp', '--acp-command', CODEX_ACP],
    env: { CODEX_HOME: home },
  };
}

/** The config.toml pointing Codex at the fake. */
export function codexConfig(fake, { model = 'gpt-5.4-mini', config = [] } = {}) {
  return [
    `model = "${model}"`,
    'model_provider = "fake"',
    'check_for_update_on_startup = false',
    ...config,
    '[analytics]',
    'enabled = false',
    '[feedback]',
    'enabled = false',
    '[model_providers.fake]',
    'name = "fake"',
    `base_url = "${fake.baseUrl}"`,
    'wire_api = "responses"',
    'experimental_bearer_token = "fake-key"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    // No bubblewrap here or in CI: Linux's Landlock keeps Codex's sandbox working
    // (without it every sandboxed command fails at once).
    '[features]',
    'use_legacy_landlock = true',
    '',
  ].join('\n');
}
