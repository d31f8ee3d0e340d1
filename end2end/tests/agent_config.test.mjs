// A folder's own agent config waits for trust (issue 38): the real Claude Code
// and Qwen Code, in a folder the user has not trusted whose config carries
// hooks and an MCP server, run none of it; once trusted the hooks run, inside
// the agent's sandbox, where a write outside the folder is refused. Each hook
// leaves a marker in the folder (the agent may write there) and one outside it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { last } from '../acp-events.mjs';
import { ROOT, makeFolder, startHub } from '../hub.mjs';
import { startFakeAnthropic, claudeAgent, say } from '../fake-anthropic.mjs';
import { startFakeQwen, qwenAgent, say as qwenSay } from '../fake-qwen.mjs';

/** A dir outside `/tmp` (the sandbox's own `/tmp` is private), outside every folder. */
function outsideDir() {
  const base = join(ROOT, 'target', 'e2e-outside');
  mkdirSync(base, { recursive: true });
  return mkdtempSync(join(base, 'hooks-'));
}

/** Hooks, as Claude Code and Qwen Code both read them, that mark `name` in the folder and outside. */
function hooks(folder, outside) {
  const mark = (name) => [{ matcher: '*', hooks: [{ type: 'command', command: `touch '${join(folder, `hook-${name}`)}'; touch '${join(outside, `hook-${name}`)}'` }] }];
  return { SessionStart: mark('SessionStart'), UserPromptSubmit: mark('UserPromptSubmit') };
}

function mcpServer(folder, name) {
  return { command: 'sh', args: ['-c', `touch '${join(folder, `mcp-${name}`)}'; sleep 30`] };
}

const marks = (dir) => readdirSync(dir).filter((name) => name.startsWith('hook-') || name.startsWith('mcp-')).sort();

async function untrustedThenTrusted(hub, folder, outside, script) {
  const config = await hub.api(`/api/chat/config?folderPath=${encodeURIComponent(folder)}`);
  assert.equal(config.body.trusted, false);
  const named = (config.body.trustNeeded?.agentConfig ?? []).join('\n');
  assert.match(named, /hooks\.SessionStart/, `the banner names the hooks: ${JSON.stringify(config.body)}`);
  assert.match(named, /mcpServers\.\w+\.command: `sh -c/, 'and the MCP server');

  script('hello');
  const first = await hub.stream('/api/chat/prompt', { folderPath: folder, message: 'hello' });
  assert.equal(last(first.events).status, 'success', JSON.stringify(first.events));
  // A moment for anything the agent started to leave its mark.
  await new Promise((done) => setTimeout(done, 1500));
  assert.deepEqual(marks(folder), [], 'nothing of the folder\'s agent config ran before trust');
  assert.deepEqual(marks(outside), []);

  await hub.trust(folder);
  script('again');
  const second = await hub.stream('/api/chat/prompt', { folderPath: folder, message: 'again' });
  assert.equal(last(second.events).status, 'success', JSON.stringify(second.events));
  await new Promise((done) => setTimeout(done, 1500));
  const ran = marks(folder);
  assert.ok(ran.includes('hook-UserPromptSubmit'), `after trust the folder's hooks run: ${ran}`);
  assert.deepEqual(marks(outside), [], 'a hook that writes outside the folder is refused by the agent\'s sandbox');
}

test('Claude Code: an untrusted folder\'s hooks and .mcp.json do not run; after trust they run in the sandbox', async () => {
  const model = await startFakeAnthropic();
  const agent = claudeAgent(model);
  const hub = await startHub(agent.args, agent.env);
  const outside = outsideDir();
  try {
    const folder = makeFolder();
    mkdirSync(join(folder, '.claude'), { recursive: true });
    writeFileSync(join(folder, '.claude/settings.json'), JSON.stringify({ hooks: hooks(folder, outside) }));
    writeFileSync(join(folder, '.mcp.json'), JSON.stringify({ mcpServers: { evil: mcpServer(folder, 'claude') } }));
    await untrustedThenTrusted(hub, folder, outside, (prompt) => model.script(prompt, say('Hi.')));
  } finally {
    await hub.stop();
    await model.stop();
    rmSync(outside, { recursive: true, force: true });
  }
});

test('Qwen Code: an untrusted folder\'s hooks and servers do not run; after trust its hooks run in the sandbox', async () => {
  const model = await startFakeQwen();
  const agent = qwenAgent(model);
  const hub = await startHub(agent.args, agent.env);
  const outside = outsideDir();
  try {
    const folder = makeFolder();
    mkdirSync(join(folder, '.qwen'), { recursive: true });
    writeFileSync(join(folder, '.qwen/settings.json'), JSON.stringify({
      hooks: hooks(folder, outside),
      mcpServers: { evil: mcpServer(folder, 'qwen') },
    }));
    await untrustedThenTrusted(hub, folder, outside, (prompt) => model.script(prompt, qwenSay('Hi.')));
    assert.equal(existsSync(join(folder, 'mcp-qwen')), false, 'Qwen Code waits for its own approval of a project server');
  } finally {
    await hub.stop();
    await model.stop();
    rmSync(outside, { recursive: true, force: true });
  }
});
