// A scripted Gemini API for end-to-end tests with the real Gemini CLI:
// `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` answered with
// server-sent events in the real wire format. It keeps no state per
// conversation: the reply is picked by the last user text (the prompt) and by
// how many model turns followed it, so a restarted or reloaded CLI gets the
// same answers.
import { createServer } from 'node:http';
import { join } from 'node:path';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { ROOT } from './hub.mjs';

export const say = (text) => ({ parts: [{ text }] });
/** A reply that thinks first, then does `reply`. */
export const think = (thought, reply) => ({ parts: [{ text: thought, thought: true }, ...reply.parts] });
export const callTool = (name, args) => ({ parts: [{ functionCall: { name, args } }] });
/** A reply that never comes: the request stays open until the client goes away. */
export const hang = () => ({ hang: true });

/**
 * Starts the fake. `script(prompt, ...replies)`: after the user text `prompt`,
 * the n-th model turn gets `replies[n]`; past the end, a plain "Done." ends the turn.
 */
export async function startFakeGemini() {
  const scripts = new Map();
  const requests = [];
  let hanging = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      const stream = /^\/v1beta\/models\/[^/:]+:streamGenerateContent/.test(req.url);
      const once = /^\/v1beta\/models\/[^/:]+:generateContent/.test(req.url);
      if (req.method !== 'POST' || !(stream || once)) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 404, message: `no such route ${req.url}`, status: 'NOT_FOUND' } }));
        return;
      }
      const request = JSON.parse(body);
      requests.push({ url: req.url, request });
      const reply = pick(scripts, request.contents ?? []);
      if (reply.hang) {
        hanging += 1;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.on('close', () => { hanging -= 1; });
        return;
      }
      const chunk = {
        candidates: [{ content: { role: 'model', parts: reply.parts }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
      };
      if (once) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(chunk));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify(chunk)}\r\n\r\n`);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${server.address().port}`,
    script: (prompt, ...replies) => scripts.set(prompt, replies),
    requests,
    /** How many requests wait on a `hang()` reply now. */
    hanging: () => hanging,
    stop: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

/** The reply for a conversation: by its last user text and the model turns since. */
function pick(scripts, contents) {
  const lastUser = contents.findLastIndex((c) => c.role === 'user' && c.parts?.some((p) => typeof p.text === 'string'));
  const prompt = lastUser < 0 ? '' : contents[lastUser].parts.map((p) => p.text ?? '').join('');
  const turns = contents.slice(lastUser + 1).filter((c) => c.role === 'model').length;
  // The latest prompt wins where one user turn holds several (an unanswered
  // prompt is merged with the next one).
  let best = null;
  for (const [key, replies] of scripts) {
    const at = prompt.lastIndexOf(key);
    if (at >= 0 && (best === null || at > best.at)) best = { at, replies };
  }
  return best?.replies[turns] ?? say('Done.');
}

/**
 * How the hub starts the real Gemini CLI against this fake: the `--acp-command`
 * and the environment (an isolated CLI home, offline, no telemetry).
 */
export function geminiAgent(fake) {
  const home = mkdtempSync(join(tmpdir(), 'gemini-home-'));
  mkdirSync(join(home, '.gemini'), { recursive: true });
  writeFileSync(join(home, '.gemini', 'settings.json'), JSON.stringify({
    security: { auth: { selectedType: 'gemini-api-key' } },
    privacy: { usageStatisticsEnabled: false },
  }));
  const bin = join(ROOT, 'end2end/gemini-cli/node_modules/.bin/gemini');
  const command = [bin, '--acp', '--skip-trust', '-m', 'gemini-2.5-flash'];
  return passEnv({
    /** The program and its arguments, as the agents file takes them. */
    command,
    args: ['--agent', 'acp', '--acp-command', command.join(' ')],
    env: {
      GOOGLE_GEMINI_BASE_URL: fake.baseUrl,
      GEMINI_API_KEY: 'fake-key',
      GEMINI_CLI_HOME: home,
      GEMINI_CLI_NO_RELAUNCH: 'true',
    },
  });
}

/** The hub gives an ACP agent PATH, HOME and the like, and only the other
 * variables `--acp-env` names (issue 24): every one this agent is started with. */
function passEnv(agent) {
  return { ...agent, args: [...agent.args, '--acp-env', Object.keys(agent.env).join(',')] };
}
