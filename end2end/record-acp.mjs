#!/usr/bin/env node
// Records what a real ACP agent sends, line by line, for the hub's mapping
// tests (server/src/agents/acp/fixtures/) and for reading an agent's habits.
//
//   node end2end/record-acp.mjs --out rec.jsonl --cwd /tmp/folder \
//     [--mode default] [--answer allow_once|reject_once|allow_always|cancel] \
//     [--cancel-after-answer] [--env NAME=VALUE ...] \
//     --prompt "make a file" [--prompt "next"] -- gemini --acp
//
// Each output line is {"dir":"in"|"out","t":ms,"msg":{…JSON-RPC…}} ("in": from
// the agent). Permission requests are answered with the first option of the
// `--answer` kind (default allow_once), or `cancelled`.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';

const args = process.argv.slice(2);
const split = args.indexOf('--');
if (split < 0) throw new Error('usage: record-acp.mjs [options] -- <agent command…>');
const [command, ...commandArgs] = args.slice(split + 1);
const options = { prompt: [], env: [], answer: 'allow_once' };
for (let i = 0; i < split; i++) {
  const name = args[i].replace(/^--/, '');
  if (name === 'cancel-after-answer') { options.cancelAfterAnswer = true; continue; }
  const value = args[++i];
  if (Array.isArray(options[name])) options[name].push(value); else options[name] = value;
}
const env = { ...process.env };
for (const pair of options.env) {
  const at = pair.indexOf('=');
  if (at < 0) delete env[pair]; else env[pair.slice(0, at)] = pair.slice(at + 1);
}

const out = createWriteStream(options.out ?? '/dev/stdout');
const started = Date.now();
const log = (dir, msg) => out.write(JSON.stringify({ dir, t: Date.now() - started, msg }) + '\n');
const child = spawn(command, commandArgs, { cwd: options.cwd ?? process.cwd(), env, stdio: ['pipe', 'pipe', 'inherit'] });
let nextId = 1;
const waiting = new Map();
const send = (msg) => { log('out', msg); child.stdin.write(JSON.stringify(msg) + '\n'); };
const request = (method, params) => new Promise((resolve, reject) => {
  const id = nextId++;
  waiting.set(id, { resolve, reject });
  send({ jsonrpc: '2.0', id, method, params });
});

createInterface({ input: child.stdout }).on('line', (line) => {
  let msg;
  try { msg = JSON.parse(line); } catch { log('in-text', line); return; }
  log('in', msg);
  if (msg.method === 'session/request_permission') {
    const option = msg.params.options.find((o) => o.kind === options.answer);
    const outcome = option ? { outcome: 'selected', optionId: option.optionId } : { outcome: 'cancelled' };
    send({ jsonrpc: '2.0', id: msg.id, result: { outcome } });
    if (options.cancelAfterAnswer) send({ jsonrpc: '2.0', method: 'session/cancel', params: { sessionId: msg.params.sessionId } });
  } else if (msg.method && msg.id !== undefined) {
    // fs/terminal requests are not offered in our capabilities; say so.
    send({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: `not offered: ${msg.method}` } });
  } else if (msg.id !== undefined && waiting.has(msg.id)) {
    const { resolve, reject } = waiting.get(msg.id);
    waiting.delete(msg.id);
    if (msg.error) reject(Object.assign(new Error(msg.error.message), { data: msg.error })); else resolve(msg.result);
  }
});
child.on('exit', (code, signal) => {
  log('exit', { code, signal });
  for (const { reject } of waiting.values()) reject(new Error(`agent exited (${code ?? signal})`));
});

try {
  await request('initialize', { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: 'record-acp', version: '1' } });
  const session = await request('session/new', { cwd: options.cwd ?? process.cwd(), mcpServers: [] });
  if (options.mode) await request('session/set_mode', { sessionId: session.sessionId, modeId: options.mode });
  for (const text of options.prompt) {
    await request('session/prompt', { sessionId: session.sessionId, prompt: [{ type: 'text', text }] }).catch((err) => log('error', { message: err.message }));
  }
  // Late messages after the last prompt's end are part of the habits recorded.
  await new Promise((resolve) => setTimeout(resolve, Number(options.linger ?? 1500)));
} catch (err) {
  log('error', { message: err.message, data: err.data });
  process.exitCode = 1;
} finally {
  child.kill('SIGTERM');
  out.end();
}
