// Starts a real hub process and a real headless Chromium for end-to-end tests.
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { chromium } from 'playwright-core';

export const ROOT = resolve(import.meta.dirname, '..');
const HUB_BIN = process.env.HUB_BIN || join(ROOT, 'target/debug/agent-hub');

/**
 * Starts `agent-hub`; resolves once it printed its URL. Each hub gets a fresh
 * data dir unless `dataDir` names one (to restart on the same data).
 */
/**
 * The hub's environment: the tester's, without their own agent settings
 * (`HUB_AGENT*`, ~/.config/agent-hub/agents.json), which must not decide what
 * a test sees; `env` on top.
 */
function testEnv(env) {
  const base = { ...process.env, RUST_LOG: 'warn', XDG_CONFIG_HOME: '/nonexistent/agent-hub-test-config' };
  for (const name of ['HUB_AGENTS_FILE', 'HUB_AGENT', 'HUB_ACP_COMMAND']) delete base[name];
  return { ...base, ...env };
}

export async function startHub(args = [], env = {}, { dataDir, port = 0, token } = {}) {
  token ||= randomBytes(12).toString('hex');
  dataDir ||= mkdtempSync(join(tmpdir(), 'hub-data-'));
  // A test that restarts a hub on its port: the port can be held for a
  // moment by a socket of the killed one, or by another test's connection.
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await launchHub(args, env, { dataDir, port, token });
    } catch (err) {
      if (port === 0 || attempt === 20 || !/Address already in use/.test(String(err.message))) throw err;
      await new Promise((done) => setTimeout(done, 250));
    }
  }
}

async function launchHub(args, env, { dataDir, port, token }) {
  const child = spawn(HUB_BIN, ['--port', String(port), '--token', token, '--data-dir', dataDir, ...args], {
    cwd: ROOT,
    env: testEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  // With --remote, the remote listener's line follows the launch line.
  const wantsRemote = args.includes('--remote');
  let remote = null;
  const url = await new Promise((resolvePromise, reject) => {
    let stdout = '';
    const timer = setTimeout(() => reject(new Error(`hub did not start: ${stderr}`)), 15000);
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      const match = stdout.match(/Agent Hub listening on (http:\/\/\S+)/);
      const remoteLine = stdout.match(/Remote listener for paired devices on (https:\/\/\S+) \(certificate SHA-256 ([0-9A-F:]+)\)/);
      if (remoteLine) remote = { origin: remoteLine[1], fingerprint: remoteLine[2] };
      if (match && (!wantsRemote || remote)) { clearTimeout(timer); resolvePromise(match[1]); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`hub exited ${code}: ${stderr}`)); });
  });
  const base = new URL(url).origin;
  return {
    url, base, token, dataDir, pid: child.pid, remote,
    stop: () => new Promise((done) => { child.once('exit', done); child.kill('SIGTERM'); }),
    kill: () => new Promise((done) => { child.once('exit', done); child.kill('SIGKILL'); }),
    api: async (path, init = {}) => {
      const response = await fetch(base + path, {
        ...init,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', ...(init.headers || {}) },
      });
      return { status: response.status, body: await response.json() };
    },
    /** Trusts the folder: its own .gemini files may loosen what the hub does (allow rules, YOLO on). */
    trust: async (folder) => {
      const response = await fetch(base + '/api/folders/trust', {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ folderPath: folder }),
      });
      if (!response.ok) throw new Error(`trusting ${folder}: ${response.status} ${await response.text()}`);
    },
    /** POSTs `body` and reads the NDJSON answer to its end: `{status, events}` (`body` on errors). */
    stream: async (path, body) => {
      const response = await fetch(base + path, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body ?? {}),
      });
      const text = await response.text();
      if (response.status !== 200) return { status: response.status, body: JSON.parse(text) };
      return { status: 200, events: text.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line)) };
    },
  };
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** A fresh project folder, optionally with a .gemini/settings.json. */
export function makeFolder(settings) {
  const dir = mkdtempSync(join(tmpdir(), 'hub-e2e-'));
  if (settings !== undefined) writeSettings(dir, settings);
  return dir;
}

export function writeSettings(dir, settings) {
  mkdirSync(join(dir, '.gemini'), { recursive: true });
  const text = typeof settings === 'string' ? settings : JSON.stringify(settings);
  writeFileSync(join(dir, '.gemini', 'settings.json'), text);
}

/** Saves a screenshot when SCREENSHOT_DIR is set (for looking at the UI). */
export async function snapshot(page, name) {
  if (process.env.SCREENSHOT_DIR) {
    mkdirSync(process.env.SCREENSHOT_DIR, { recursive: true });
    await page.screenshot({ path: join(process.env.SCREENSHOT_DIR, `${name}.png`), fullPage: true });
  }
}
