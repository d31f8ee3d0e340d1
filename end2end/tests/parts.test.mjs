// The client's wasm comes in parts (app/src/parts.rs): the page hydrates from
// the main module alone, the parts (the open folder's chat, cards, markdown,
// rules) are fetched after that, and a part that cannot be fetched is said on
// the page instead of stopping it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { ROOT, startHub, makeFolder } from '../hub.mjs';
import { openChat, sendPrompt } from '../chat-page.mjs';
import { modelAndBrowser } from '../setup.mjs';
import { call, text } from '../fake-model.mjs';

const PART = /\/pkg\/(split_|chunk_)[^/]*\.wasm$/;

const setup = modelAndBrowser();

/** Runs before the page's scripts: when the page hydrated, on the clock resource timings use. */
function markHydration() {
  new MutationObserver((_, observer) => {
    if (document.documentElement.dataset.hydrated === 'true') {
      window.__hydratedAt = performance.now();
      observer.disconnect();
    }
  }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-hydrated'] });
}

test('the page hydrates from the main module; the parts come after, and the chat, markdown and a card use them', async () => {
  const hub = await startHub(['--model-url', setup.model.baseUrl, '--model', 'fake-model']);
  try {
    const folder = makeFolder();
    setup.model.script(
      call('p1', 'run_shell_command', { command: 'echo parts' }),
      text('Ran **it**.'),
    );
    const context = await setup.browser.newContext();
    await context.addInitScript(markHydration);
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(hub.url);
    await page.waitForSelector('html[data-hydrated="true"]');
    await page.fill('#folder-path', folder);
    await page.press('#folder-path', 'Enter');
    await page.getByTestId('chat').waitFor();
    await sendPrompt(page, 'run it');
    await page.getByTestId('approval-card').waitFor();
    await page.keyboard.press('1');
    await expect(async () => assert.equal(await page.getByTestId('assistant-message').locator('strong').innerText(), 'it'));

    const { hydratedAt, resources } = await page.evaluate(() => ({
      hydratedAt: window.__hydratedAt,
      resources: performance.getEntriesByType('resource').map((entry) => ({ name: entry.name, start: entry.startTime })),
    }));
    const parts = resources.filter((resource) => PART.test(new URL(resource.name).pathname));
    const main = resources.find((resource) => new URL(resource.name).pathname === '/pkg/agent_hub.wasm');
    assert.ok(main && main.start < hydratedAt, 'the main module is loaded before hydration');
    for (const name of ['split_session', 'split_cards', 'split_markdown']) {
      assert.ok(parts.some((part) => part.name.includes(`/${name}.`)), `${name} was fetched`);
    }
    for (const part of parts) {
      assert.ok(part.start >= hydratedAt, `${part.name} was fetched before the page hydrated`);
    }

    // Links open the same views: the folder's page straight from its URL, and
    // /decisions, whose table the browser fills from the policy part.
    await page.goto(`${hub.base}/?folder=${encodeURIComponent(folder)}`);
    await page.waitForSelector('html[data-hydrated="true"]');
    await expect(async () => assert.equal(await page.getByTestId('assistant-message').locator('strong').innerText(), 'it'));
    await page.goto(`${hub.base}/decisions`);
    await page.waitForSelector('html[data-hydrated="true"]');
    const view = page.getByTestId('decisions-view');
    await view.waitFor();
    await expect(async () => assert.match(await view.getByTestId('audit-row').first().innerText(), /echo parts/));
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    await hub.stop();
  }
});

test('a part that cannot be fetched is said where it would be; the rest of the page goes on', async () => {
  // The built site without the cards part, as a page open across a rebuild sees it.
  const site = mkdtempSync(join(tmpdir(), 'hub-site-'));
  cpSync(join(ROOT, 'target/site'), site, { recursive: true });
  const cards = readdirSync(join(site, 'pkg')).filter((name) => name.startsWith('split_cards.'));
  assert.ok(cards.length > 0, 'the build has a cards part');
  for (const name of cards) rmSync(join(site, 'pkg', name));
  const hub = await startHub(['--model-url', setup.model.baseUrl, '--model', 'fake-model', '--site-root', site]);
  try {
    const folder = makeFolder();
    setup.model.script(call('m1', 'run_shell_command', { command: 'echo missing' }));
    const { page, errors } = await openChat(setup.browser, hub, folder);
    await sendPrompt(page, 'run it');
    const missing = page.getByTestId('part-missing');
    await missing.waitFor();
    assert.match(await missing.innerText(), /could not be loaded from the hub\. Reload the page\./);
    // The page is alive: the call waits in the transcript, and another part still opens.
    await expect(async () => assert.equal(
      await page.locator('[data-testid="tool-entry"][data-tool-id="m1"]').getAttribute('data-state'), 'waiting'));
    await page.getByTestId('rules-button').click();
    await page.getByTestId('rules-panel').waitFor();
    assert.deepEqual(errors, []);
  } finally {
    await hub.stop();
    rmSync(site, { recursive: true, force: true });
  }
});
