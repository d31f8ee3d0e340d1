// Approving from a phone over the remote listener (issue 26): the hub's own page
// pairs a phone (code in words, QR code, fingerprint); the phone, in a 390×844
// touch viewport over HTTPS, pairs with the code, sees the waiting card, taps
// Yes, and the command runs; revoked on the hub's page, the phone is out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { makeFolder, snapshot } from '../hub.mjs';
import { hubWithModel } from '../setup.mjs';
import { call, text } from '../fake-model.mjs';

const setup = hubWithModel(['--remote', '127.0.0.1:0']);

async function desktopPage() {
  const page = await (await setup.browser.newContext()).newPage();
  await page.goto(`${setup.hub.base}/?token=${setup.hub.token}`);
  await page.waitForSelector('html[data-hydrated="true"]', { timeout: 10000 });
  return page;
}

async function phonePage() {
  // The hub's own certificate: the user accepted it after comparing its fingerprint.
  const context = await setup.browser.newContext({
    viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, ignoreHTTPSErrors: true,
  });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  return { page, errors };
}

test('a phone pairs over HTTPS, taps Yes on a card and the command runs; revoked, it is out', async () => {
  const { hub } = setup;
  assert.match(hub.remote.origin, /^https:\/\/127\.0\.0\.1:\d+$/);

  // The hub's own page makes the code.
  const desktop = await desktopPage();
  await desktop.getByTestId('phones-button').click();
  await desktop.getByTestId('pair-phone').click();
  const words = (await desktop.getByTestId('pairing-words').innerText()).trim();
  assert.match(words, /^[a-z]+ [a-z]+ [a-z]+ [a-z]+$/);
  assert.equal(await desktop.getByTestId('fingerprint').innerText(), hub.remote.fingerprint);
  assert.equal(await desktop.locator('[data-testid="pairing-code"] svg').count(), 1, 'the QR code is drawn');
  await snapshot(desktop, 'remote-pairing-code');

  // The phone: nothing but the pairing page until it pairs; the launch token opens nothing.
  const { page: phone, errors } = await phonePage();
  await phone.goto(`${hub.remote.origin}/?token=${hub.token}`);
  assert.equal(new URL(phone.url()).pathname, '/pair');
  const refused = await phone.evaluate(async (token) => [
    (await fetch('/api/projects')).status,
    (await fetch('/api/projects', { headers: { Authorization: `Bearer ${token}` } })).status,
    (await fetch(`/api/projects?token=${token}`)).status,
  ], hub.token);
  assert.deepEqual(refused, [401, 401, 401], 'the launch token opens nothing on the remote listener');
  await phone.fill('#code', words);
  await phone.fill('#name', 'Test phone');
  await snapshot(phone, 'remote-pair-page');
  await phone.getByRole('button', { name: 'Pair' }).tap();
  await phone.waitForURL(`${hub.remote.origin}/`);
  await phone.waitForSelector('html[data-hydrated="true"]', { timeout: 10000 });
  await phone.getByTestId('inbox').waitFor();
  assert.equal(await phone.getByTestId('phones-button').count(), 1);
  assert.equal(await phone.getByTestId('phones-button').getAttribute('hidden'), '', 'no pairing from a phone');
  await expect(async () => assert.equal(await desktop.getByTestId('device').count(), 1));
  // The hub's own page says a device paired, so a pairing nobody made does not go unseen.
  await expect(async () => assert.match(await desktop.getByTestId('error-banner').innerText(), /"Test phone" from 127\.0\.0\.1/));

  // A card waits in a folder; the phone sees it across folders and taps Yes.
  const folder = makeFolder();
  setup.model.script(
    call('p1', 'run_shell_command', { command: 'echo from-the-phone > phone.txt' }),
    text('Done.'),
  );
  const started = hub.stream('/api/chat/prompt', { folderPath: folder, message: 'write it' });
  await phone.getByTestId('inbox-item').first().tap();
  const card = phone.getByTestId('approval-card');
  await card.waitFor();
  assert.match(await card.innerText(), /echo from-the-phone > phone\.txt/);
  assert.equal(existsSync(join(folder, 'phone.txt')), false, 'nothing runs before the decision');
  await snapshot(phone, 'remote-phone-card');
  await card.getByRole('button', { name: 'Yes', exact: true }).tap();
  await card.waitFor({ state: 'detached' });
  await expect(async () => assert.equal(readFileSync(join(folder, 'phone.txt'), 'utf8'), 'from-the-phone\n'));
  await started;
  // The phone's Yes is the user's decision in the audit trail, as on the desktop.
  const audit = await fetch(`${hub.base}/api/audit?folderPath=${encodeURIComponent(realpathSync(folder))}`, {
    headers: { Authorization: `Bearer ${hub.token}` },
  }).then((response) => response.text());
  const rows = audit.trim().split('\n').map((line) => JSON.parse(line));
  assert.deepEqual(rows.map((row) => [row.toolId, row.decision, row.decidedBy, row.outcome]),
    [['p1', 'approved', 'user', 'ran']], audit);

  // Revoked on the hub's page: the phone's live stream ends and the page goes to pairing.
  await desktop.getByRole('button', { name: 'Revoke Test phone' }).click();
  await expect(async () => assert.equal(await desktop.getByTestId('device').count(), 0));
  await phone.waitForURL(`${hub.remote.origin}/pair`, { timeout: 10000 });
  const after = await phone.evaluate(async () => (await fetch('/api/projects')).status);
  assert.equal(after, 401);
  assert.deepEqual(errors, []);
});
