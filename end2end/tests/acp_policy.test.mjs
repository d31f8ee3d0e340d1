// Policy files with the real Gemini CLI over ACP: a workspace policy file
// denies a command the agent asks for, and the user's policy files (read by
// the hub) deny and allow the agent's permission requests the hub judges.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeFolder } from '../hub.mjs';
import { startFakeGemini, geminiAgent, callTool, say } from '../fake-gemini.mjs';
import { hubWithAgent } from '../setup.mjs';

// The hub's user tier, which the agent (with its own home) does not read.
const userPolicies = mkdtempSync(join(tmpdir(), 'hub-user-policies-'));
writeFileSync(join(userPolicies, 'mine.toml'), [
  '[[rule]]', 'toolName = "run_shell_command"', 'commandPrefix = "rm -rf"', 'decision = "deny"',
  'priority = 500', 'denyMessage = "Recursive deletes are off limits."', '',
  '[[rule]]', 'toolName = "run_shell_command"', 'commandPrefix = "echo fine"', 'decision = "allow"',
  'priority = 500', 'allowRedirection = true',
].join('\n'));

const setup = hubWithAgent(startFakeGemini, geminiAgent, ['--user-policies', userPolicies]);

const prompt = (folder, message) => setup.hub.stream('/api/chat/prompt', { folderPath: folder, message });

function workspacePolicy(folder, text) {
  mkdirSync(join(folder, '.gemini', 'policies'), { recursive: true });
  writeFileSync(join(folder, '.gemini', 'policies', 'team.toml'), text);
}

test('a workspace policy file denies a command the agent asks for; it never runs', async () => {
  const folder = makeFolder();
  workspacePolicy(folder, [
    '[[rule]]', 'toolName = "run_shell_command"', 'commandPrefix = "touch"', 'decision = "deny"', 'priority = 100',
    'denyMessage = "No new files from the shell here."',
  ].join('\n'));
  setup.model.script('make forbidden', callTool('run_shell_command', { command: 'touch forbidden.txt' }), say('Understood.'));
  const turn = await prompt(folder, 'make forbidden');
  assert.equal(turn.status, 200, JSON.stringify(turn.body));
  assert.equal(existsSync(join(folder, 'forbidden.txt')), false, 'the denied command did not run');
  assert.notEqual(turn.events.at(-1).status, 'waiting_approval', 'a deny needs no card');
  // Gemini CLI asks the hub; the hub judges by the folder's file, as Gemini CLI would.
  const use = turn.events.find((event) => event.type === 'tool_use');
  assert.equal(use?.policy?.decision, 'deny', JSON.stringify(turn.events));
  assert.match(use.policy.source, /\.gemini\/policies\/team\.toml, rule 1/);
  const result = turn.events.find((event) => event.type === 'tool_result' && event.tool_id === use.tool_id);
  assert.equal(result?.error?.type, 'denied_by_policy', JSON.stringify(turn.events));
  assert.match(result.error.message, /No new files from the shell here\./);
});

test("the hub judges the agent's requests by the user's policy files: a deny with its message, an allow without a card", async () => {
  const folder = makeFolder();
  setup.model.script('wipe it', callTool('run_shell_command', { command: 'rm -rf build' }), say('Fine, I will not.'));
  const denied = await prompt(folder, 'wipe it');
  assert.equal(denied.status, 200, JSON.stringify(denied.body));
  const use = denied.events.find((event) => event.type === 'tool_use');
  assert.equal(use?.policy?.decision, 'deny', JSON.stringify(denied.events));
  assert.match(use.policy.source, /mine\.toml/);
  const result = denied.events.find((event) => event.type === 'tool_result' && event.tool_id === use.tool_id);
  assert.equal(result.error.type, 'denied_by_policy');
  assert.match(result.error.message, /Recursive deletes are off limits\./);

  setup.model.script('fine please', callTool('run_shell_command', { command: 'echo fine > fine.txt' }), say('Wrote it.'));
  const allowed = await prompt(folder, 'fine please');
  assert.equal(allowed.events.at(-1).status, 'success', JSON.stringify(allowed.events));
  assert.equal(allowed.events.find((event) => event.type === 'tool_use')?.policy?.decision, 'allow');
  assert.ok(existsSync(join(folder, 'fine.txt')), 'the allowed command ran without a card');

  const audit = await fetch(`${setup.hub.base}/api/audit?folderPath=${encodeURIComponent(folder)}`, {
    headers: { Authorization: `Bearer ${setup.hub.token}` },
  }).then((response) => response.text());
  const rows = audit.trim().split('\n').map((line) => JSON.parse(line));
  assert.deepEqual(rows.map((row) => [row.decision, row.decidedBy, row.outcome]),
    [['denied', 'rule', 'denied'], ['allowed', 'rule', 'ran']], audit);
});
