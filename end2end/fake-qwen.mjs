// A scripted OpenAI Chat Completions API for end-to-end tests with the real
// Qwen Code (`qwen --acp`): `POST /v1/chat/completions` answered with
// server-sent events in the real wire format (a role chunk, text or reasoning
// deltas, tool calls whose arguments arrive in pieces, a finish chunk, a usage
// chunk, `data: [DONE]`). Like fake-gemini.mjs it keeps no state per
// conversation: the reply is picked by the latest prompt the user typed and by
// how many model turns followed it, so a restarted or reloaded agent gets the
// same answers. Qwen Code's side requests are answered too, so it never stalls:
// its auto-mode safety classifier (a forced `respond_in_schema` call) and any
// other helper (titles, memory, suggestions) gets a short text.
import { createServer } from 'node:http';
import { join } from 'node:path';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { ROOT } from './hub.mjs';

export const say = (text) => ({ text });
/** A reply that reasons first (`reasoning_content`), then does `reply`. */
export const think = (thought, reply) => ({ ...reply, thought });
/** A call of one of Qwen Code's tools, e.g. `run_shell_command {command, description}`,
 * `write_file {file_path (absolute), content}`, `edit {file_path, old_string, new_string}`. */
export const callTool = (name, args) => ({ calls: [{ name, args }] });
/** A reply that never comes: the request stays open until the client goes away. */
export const hang = () => ({ hang: true });

/**
 * Starts the fake. `script(prompt, ...replies)`: after the user's prompt
 * `prompt`, the n-th model turn gets `replies[n]`; past the end, a plain
 * "Done." ends the turn. `classify(call)` answers the auto-mode classifier
 * (`true` blocks); by default it allows everything, as a classifier would for
 * the harmless calls the tests make.
 */
export async function startFakeQwen() {
  const scripts = new Map();
  const requests = [];
  let hanging = 0;
  let nextCall = 0;
  const fake = {
    classify: () => false,
  };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      if (req.method !== 'POST' || !/^(\/v1)?\/chat\/completions$/.test(req.url)) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no such route ${req.method} ${req.url}`, type: 'invalid_request_error' } }));
        return;
      }
      const request = JSON.parse(body);
      const kind = kindOf(request);
      requests.push({ url: req.url, kind, request });
      let reply;
      if (kind === 'classifier') {
        const pending = lastText(request.messages);
        reply = { calls: [{ name: 'respond_in_schema', args: { shouldBlock: Boolean(fake.classify(pending)) } }] };
      } else if (kind === 'main') {
        reply = pick(scripts, request.messages ?? []);
      } else {
        reply = say('OK.');
      }
      if (reply.hang) {
        hanging += 1;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.on('close', () => { hanging -= 1; });
        return;
      }
      const ids = (reply.calls ?? []).map(() => `call_fake_${++nextCall}`);
      if (!request.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(completion(request, reply, ids)));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const chunk of chunks(request, reply, ids)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(fake, {
    baseUrl: `http://127.0.0.1:${server.address().port}/v1`,
    script: (prompt, ...replies) => scripts.set(prompt, replies),
    /** Every request: `{url, kind: 'main'|'classifier'|'side', request}`. */
    requests,
    /** The requests of the conversation itself (not the classifier's or other helpers'). */
    turns: () => requests.filter((r) => r.kind === 'main'),
    /** How many requests wait on a `hang()` reply now. */
    hanging: () => hanging,
    stop: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  });
}

/** The conversation itself, the auto-mode classifier, or another helper request. */
function kindOf(request) {
  const tools = (request.tools ?? []).map((t) => t.function?.name);
  if (tools.includes('respond_in_schema')) return 'classifier';
  const system = request.messages?.find((m) => m.role === 'system');
  return textOf(system).startsWith('You are Qwen Code') ? 'main' : 'side';
}

/** A message's text; `<system-reminder>` parts (context Qwen Code adds) left out. */
function textOf(message) {
  if (!message) return '';
  if (typeof message.content === 'string') return message.content;
  return (message.content ?? [])
    .filter((part) => part.type === 'text' && !part.text.startsWith('<system-reminder>'))
    .map((part) => part.text)
    .join('');
}

function lastText(messages = []) {
  return textOf(messages.findLast((m) => m.role === 'user'));
}

/** The reply for a conversation: by its last user prompt and the model turns since. */
function pick(scripts, messages) {
  const lastUser = messages.findLastIndex((m) => m.role === 'user' && textOf(m).trim() !== '');
  const prompt = lastUser < 0 ? '' : textOf(messages[lastUser]);
  const turns = messages.slice(lastUser + 1).filter((m) => m.role === 'assistant').length;
  // The latest prompt wins where one user turn holds several.
  let best = null;
  for (const [key, replies] of scripts) {
    const at = prompt.lastIndexOf(key);
    if (at >= 0 && (best === null || at > best.at)) best = { at, replies };
  }
  return best?.replies[turns] ?? say('Done.');
}

const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

function chunk(request, delta, finish = null) {
  return { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model: request.model ?? 'fake',
    choices: [{ index: 0, delta, finish_reason: finish }] };
}

function chunks(request, reply, ids) {
  const out = [chunk(request, { role: 'assistant', content: '' })];
  if (reply.thought) out.push(chunk(request, { reasoning_content: reply.thought }));
  if (reply.text) {
    // Two pieces: the agent has to put the streamed text together.
    const half = Math.ceil(reply.text.length / 2);
    out.push(chunk(request, { content: reply.text.slice(0, half) }), chunk(request, { content: reply.text.slice(half) }));
  }
  (reply.calls ?? []).forEach(({ name, args }, index) => {
    const json = JSON.stringify(args);
    out.push(chunk(request, { tool_calls: [{ index, id: ids[index], type: 'function', function: { name, arguments: '' } }] }));
    const third = Math.ceil(json.length / 3);
    for (let at = 0; at < json.length; at += third) {
      out.push(chunk(request, { tool_calls: [{ index, function: { arguments: json.slice(at, at + third) } }] }));
    }
  });
  out.push(chunk(request, {}, reply.calls ? 'tool_calls' : 'stop'));
  if (request.stream_options?.include_usage) {
    out.push({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model: request.model ?? 'fake', choices: [], usage });
  }
  return out;
}

function completion(request, reply, ids) {
  const message = { role: 'assistant', content: reply.text ?? null };
  if (reply.thought) message.reasoning_content = reply.thought;
  if (reply.calls) {
    message.tool_calls = reply.calls.map(({ name, args }, index) => ({
      id: ids[index], type: 'function', function: { name, arguments: JSON.stringify(args) },
    }));
  }
  return { id: 'chatcmpl-fake', object: 'chat.completion', created: 1, model: request.model ?? 'fake',
    choices: [{ index: 0, message, finish_reason: reply.calls ? 'tool_calls' : 'stop' }], usage };
}

/** Qwen Code's settings for the tests: the fake as its one OpenAI-compatible
 * model (the key from `OPENAI_API_KEY`), nothing sent anywhere else, no
 * background helpers (memory extraction and next-prompt suggestions would ask
 * the model after every turn). Its bundled skills stay on, as for a user: they
 * put half a megabyte of skill text on one line of each
 * `available_commands_update` (the recordings turn them off with
 * `{skills: {disabledLevels: ['bundled']}}` to stay small). */
export function qwenSettings(fake, extra = {}) {
  return {
    security: { auth: { selectedType: 'openai' } },
    model: { name: 'qwen-fake' },
    modelProviders: { openai: [{ id: 'qwen-fake', name: 'Qwen Fake', baseUrl: fake.baseUrl, envKey: 'OPENAI_API_KEY' }] },
    general: { enableAutoUpdate: false },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    ui: { enableFollowupSuggestions: false },
    memory: { enableManagedAutoMemory: false, enableManagedAutoDream: false, enableAutoSkill: false },
    ...extra,
  };
}

/** The command that starts Qwen Code over ACP (it needs the Node.js 22 installed beside it). */
export function qwenCommand() {
  const bin = join(ROOT, 'end2end/acp-agents/node_modules/.bin');
  return [join(bin, 'node'), join(bin, 'qwen'), '--acp'];
}

/** What the agent is started with: the hub gives an ACP agent PATH, HOME and
 * the like, and only the other variables `--acp-env` names (issue 24). */
const QWEN_ENV = ['OPENAI_API_KEY', 'QWEN_HOME', 'QWEN_USAGE_STATISTICS_ENABLED', 'QWEN_TELEMETRY_ENABLED', 'NODE_COMPILE_CACHE'];

/**
 * How the hub starts the real Qwen Code against this fake: the `--acp-command`
 * and the environment: an isolated config dir (`QWEN_HOME`) whose settings.json
 * names the fake as the model's endpoint. Not `OPENAI_BASE_URL`: the hub reads
 * that one itself (its own `--model-url`) and refuses to start without a model.
 * The hub keeps `OPENAI_API_KEY` from what it starts, so `--acp-env` passes it
 * on, as a user's own key would be. `options.settings` adds to the settings.
 */
export function qwenAgent(fake, options = {}) {
  const home = mkdtempSync(join(tmpdir(), 'qwen-home-'));
  writeFileSync(join(home, 'settings.json'), JSON.stringify(qwenSettings(fake, options.settings)));
  return {
    home,
    args: ['--agent', 'acp', '--acp-command', qwenCommand().join(' '), '--acp-env', QWEN_ENV.join(',')],
    env: {
      QWEN_HOME: home,
      OPENAI_API_KEY: 'fake-key',
      QWEN_USAGE_STATISTICS_ENABLED: 'false',
      QWEN_TELEMETRY_ENABLED: 'false',
      // Node's cache of compiled code: each start of the agent costs seconds of
      // CPU to load its bundle; later starts (every session is a process) reuse it.
      NODE_COMPILE_CACHE: join(tmpdir(), 'qwen-node-compile-cache'),
    },
  };
}
