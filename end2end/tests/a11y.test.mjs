// axe-core (npm, locked) injected into the hub's pages in headless Chromium, in
// light and dark: the hub page with a card waiting, its sessions and the
// Changes panel open, and the decisions page. Any violation fails the test,
// listed with the rule, its impact and the nodes it found.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { expect } from './expect.mjs';
import { makeFolder, snapshot } from '../hub.mjs';
import { openChat, sendPrompt } from '../chat-page.mjs';
import { hubWithModel } from '../setup.mjs';
import { call } from '../fake-model.mjs';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

const setup = hubWithModel();

/** Every axe violation on the page as it is now, one readable line per node. */
async function violations(page) {
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: AXE });
  const found = await page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({
      rule: v.id,
      impact: v.impact,
      nodes: v.nodes.map((node) => `${node.target.join(' ')}: ${node.failureSummary.replace(/\s+/g, ' ')}`),
    }));
  });
  return found.flatMap((v) => v.nodes.map((node) => `${v.rule} (${v.impact}) ${node}`));
}

test('no axe violation on the hub page as it first loads, nothing focused yet', async () => {
  const page = await (await setup.browser.newContext()).newPage();
  await page.goto(setup.hub.url);
  await page.waitForSelector('html[data-hydrated="true"]', { timeout: 10000 });
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    assert.deepEqual(await violations(page), [], `the first load in ${scheme}`);
  }
  await page.context().close();
});

for (const scheme of ['light', 'dark']) {
  test(`no axe violation on the hub page with a card waiting, in ${scheme}`, async () => {
    const folder = makeFolder();
    setup.model.script(call('a1', 'run_shell_command', { command: 'echo accessible' }));
    const { page, errors } = await openChat(setup.browser, setup.hub, folder);
    await page.emulateMedia({ colorScheme: scheme });
    await sendPrompt(page, 'run something');
    await page.getByTestId('approval-card').waitFor();
    await page.getByTestId('session-list').waitFor();
    await expect(async () => assert.ok((await page.getByTestId('inbox-item').count()) > 0));
    assert.deepEqual(await violations(page), [], `the hub page in ${scheme}`);

    await page.getByTestId('changes-button').click();
    await page.getByTestId('changes-panel').waitFor();
    assert.deepEqual(await violations(page), [], `the Changes panel in ${scheme}`);
    await snapshot(page, `a11y-hub-${scheme}`);

    await page.goto(`${new URL(setup.hub.url).origin}/decisions`);
    await page.waitForSelector('html[data-hydrated="true"]');
    await page.getByTestId('decisions-table').waitFor().catch(() => {});
    assert.deepEqual(await violations(page), [], `the decisions page in ${scheme}`);
    assert.deepEqual(errors, []);
  });
}
