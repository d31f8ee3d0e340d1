// Rewind with the real Gemini CLI over ACP against a fake Gemini API (issue
// 28): the command the CLI runs itself (its own process writes the folder,
// not the hub's tools) is recorded in the turn's checkpoint, and a rewind puts
// the folder back; the CLI's conversation is its own, and the answer says it
// was not rewound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeFolder } from '../hub.mjs';
import { startFakeGemini, geminiAgent, callTool, say } from '../fake-gemini.mjs';
import { hubWithAgent } from '../setup.mjs';

const setup = hubWithAgent(startFakeGemini, geminiAgent);

test("the CLI's own shell edits are a checkpoint, and a rewind undoes them", async () => {
  const folder = makeFolder();
  writeFileSync(join(folder, 'keep.txt'), 'alpha\n');
  setup.model.script('edit things',
    callTool('run_shell_command', { command: 'sed -i s/alpha/beta/ keep.txt && mkdir -p made/deep && echo hi > made/deep/out.txt' }),
    say('Edited.'));
  const first = await setup.hub.stream('/api/chat/prompt', { folderPath: folder, message: 'edit things' });
  assert.equal(first.status, 200, JSON.stringify(first.body));
  const use = first.events.find((event) => event.type === 'tool_use');
  assert.ok(use, JSON.stringify(first.events));
  const session = first.events.find((event) => event.type === 'init').session_id;
  const rest = await setup.hub.stream(`/api/sessions/${session}/approve`, { toolId: use.tool_id, decision: 'approve' });
  assert.equal(rest.events.at(-1).status, 'success', JSON.stringify(rest.events));
  assert.equal(readFileSync(join(folder, 'keep.txt'), 'utf8'), 'beta\n');

  const listed = await setup.hub.api(`/api/sessions/${session}/checkpoints`);
  assert.equal(listed.status, 200);
  assert.equal(listed.body.checkpoints.length, 1, JSON.stringify(listed.body));
  const [checkpoint] = listed.body.checkpoints;
  assert.equal(checkpoint.prompt, 'edit things');
  assert.deepEqual(checkpoint.files.map((file) => [file.path, file.change]).sort(),
    [['keep.txt', 'modified'], ['made/deep/out.txt', 'added']]);

  const rewound = await setup.hub.api(`/api/sessions/${session}/rewind`, {
    method: 'POST', body: JSON.stringify({ checkpoint: checkpoint.id }),
  });
  assert.equal(rewound.status, 200, JSON.stringify(rewound.body));
  assert.equal(rewound.body.conversation, false, "an ACP agent's conversation is its own");
  assert.equal(readFileSync(join(folder, 'keep.txt'), 'utf8'), 'alpha\n');
  assert.ok(!existsSync(join(folder, 'made')), 'the directories the command made are gone');
});
