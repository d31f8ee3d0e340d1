// The sandbox as the header shows it: on, with the folder's Network switch
// (kept by the hub); unavailable (no bwrap on PATH), YOLO refused with the
// reason; off by choice (--no-sandbox), YOLO allowed. Real hubs, real Chromium.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { expect } from './expect.mjs';
import { makeFolder, snapshot, startHub } from '../hub.mjs';
import { hubAndBrowser } from '../setup.mjs';

const setup = hubAndBrowser();

async function openFolder(hub, folder) {
  const page = await (await setup.browser.newContext()).newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(`${hub.url}&folder=${encodeURIComponent(folder)}`);
  await page.waitForSelector('html[data-hydrated="true"]', { timeout: 10000 });
  await expect(async () => assert.equal(await page.getByTestId('current-folder').innerText(), realpathSync(folder)));
  return { page, errors };
}

/** A PATH with what the hub needs but no bwrap. */
function pathWithoutBwrap() {
  const bin = mkdtempSync(join(tmpdir(), 'no-bwrap-'));
  for (const tool of ['git', 'bash', 'sh', 'node']) {
    const found = execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim();
    symlinkSync(found, join(bin, tool));
  }
  return bin;
}

test('the header says the sandbox is on, and the Network switch is the folder\'s', async () => {
  const folder = makeFolder();
  const { page, errors } = await openFolder(setup.hub, folder);
  await expect(async () => assert.equal(await page.getByTestId('sandbox-state').innerText(), 'Sandbox'));
  const network = page.getByTestId('network-switch');
  assert.equal(await network.getAttribute('aria-checked'), 'false');
  await network.click();
  await expect(async () => assert.equal(await network.getAttribute('aria-checked'), 'true'));
  assert.equal(await network.innerText(), 'Network on');
  await snapshot(page, 'sandbox-network-on');
  const { body } = await setup.hub.api(`/api/chat/config?folderPath=${encodeURIComponent(folder)}`);
  assert.equal(body.network, true);
  assert.equal(body.sandbox.state, 'on');
  // YOLO does not touch it, and it stays across a reload.
  await page.getByTestId('yolo-switch').click();
  await page.reload();
  await expect(async () => assert.equal(await page.getByTestId('network-switch').getAttribute('aria-checked'), 'true'));
  assert.deepEqual(errors, []);
  await page.context().close();
});

test('without bwrap the header says why and YOLO stays off; --no-sandbox says so and allows it', async () => {
  const hub = await startHub([], { PATH: pathWithoutBwrap() });
  try {
    const folder = makeFolder();
    const { page } = await openFolder(hub, folder);
    const state = page.getByTestId('sandbox-state');
    await expect(async () => assert.equal(await state.innerText(), 'No sandbox: YOLO off'));
    assert.match(await state.getAttribute('title'), /bwrap/);
    assert.equal(await page.getByTestId('network-switch').isVisible(), false, 'no network to switch without a sandbox');
    await page.getByTestId('yolo-switch').click();
    await expect(async () => assert.match(await page.getByRole('alert').first().innerText(), /sandbox/i));
    assert.equal(await page.getByTestId('yolo-switch').getAttribute('aria-checked'), 'false');
    await snapshot(page, 'sandbox-unavailable');
    await page.context().close();
  } finally {
    await hub.stop();
  }

  const chosen = await startHub(['--no-sandbox']);
  try {
    const { page } = await openFolder(chosen, makeFolder());
    await expect(async () => assert.equal(await page.getByTestId('sandbox-state').innerText(), 'No sandbox'));
    await page.getByTestId('yolo-switch').click();
    await expect(async () => assert.equal(await page.getByTestId('yolo-switch').getAttribute('aria-checked'), 'true'));
    await page.context().close();
  } finally {
    await chosen.stop();
  }
});
