// The folder browser as a user meets it: typing a path completes folder names
// (from GET /api/fs/dirs), the keyboard picks one, Open opens it; `~` is the
// home; the folders opened last come first, after a reload too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { expect } from './expect.mjs';
import { makeFolder, snapshot } from '../hub.mjs';
import { hubAndBrowser } from '../setup.mjs';

const setup = hubAndBrowser();

async function openHub() {
  const page = await (await setup.browser.newContext()).newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(setup.hub.url);
  await page.waitForSelector('html[data-hydrated="true"]', { timeout: 10000 });
  return { page, errors };
}

/** The suggestions the combobox's list holds now: `[value, label]`. */
const offered = (page) =>
  page.locator('#folder-suggestions [role=option]').evaluateAll((options) =>
    options.map((option) => [...option.querySelectorAll('span')].map((span) => span.textContent)));

const currentFolder = (page) => page.getByTestId('current-folder').innerText();

test('typing a partial path completes folder names; picking one with the keyboard and Open opens it', async () => {
  const root = realpathSync(makeFolder());
  for (const name of ['project-alpha', 'project-beta', 'other', '.project-hidden']) mkdirSync(join(root, name));
  writeFileSync(join(root, 'project-file.txt'), 'not a folder');
  const { page, errors } = await openHub();

  const input = page.getByRole('combobox', { name: 'Open a folder' });
  assert.equal(await input.count(), 1, 'the input is a combobox named by its label');
  await input.click();
  await input.pressSequentially(`${root}/proj`);
  await expect(async () => assert.deepEqual((await offered(page)).map(([value]) => value),
    [`${root}/project-alpha/`, `${root}/project-beta/`]), { timeout: 10000 });
  await input.pressSequentially('ect-a');
  await expect(async () => assert.deepEqual((await offered(page)).map(([value]) => value), [`${root}/project-alpha/`]));
  await snapshot(page, 'folder-completion');

  // Down marks the suggestion (the screen reader hears it as the active option), Enter takes it.
  const list = page.getByRole('listbox', { name: 'Folder suggestions' });
  assert.ok(await list.isVisible());
  assert.equal(await input.getAttribute('aria-expanded'), 'true');
  await input.press('ArrowDown');
  const marked = page.getByRole('option', { name: `${root}/project-alpha/`, selected: true });
  assert.equal(await input.getAttribute('aria-activedescendant'), await marked.getAttribute('id'));
  await input.press('Enter');
  await expect(async () => assert.equal(await input.inputValue(), `${root}/project-alpha/`));
  await page.getByRole('button', { name: 'Open' }).click();
  await expect(async () => assert.equal(await currentFolder(page), join(root, 'project-alpha')));

  // Hidden folders only when the name begun starts with a dot.
  await input.fill(`${root}/.pro`);
  await expect(async () => assert.deepEqual((await offered(page)).map(([value]) => value), [`${root}/.project-hidden/`]));
  assert.deepEqual(errors, []);
});

test('~ completes from the home folder and opens by its absolute path', async () => {
  const home = mkdtempSync(join(homedir(), 'hub-e2e-home-'));
  try {
    mkdirSync(join(home, 'inside'));
    const { page, errors } = await openHub();
    const input = page.locator('#folder-path');
    await input.click();
    await input.pressSequentially(`~/${basename(home)}/ins`);
    await expect(async () => assert.deepEqual((await offered(page)).map(([value]) => value),
      [`~/${basename(home)}/inside/`]), { timeout: 10000 });
    await input.press('ArrowDown');
    await input.press('Enter');
    await expect(async () => assert.equal(await input.inputValue(), `~/${basename(home)}/inside/`));
    // Nothing marked now: Enter sends the form.
    await input.press('Enter');
    await expect(async () => assert.equal(await currentFolder(page), realpathSync(join(home, 'inside'))));
    assert.deepEqual(errors, []);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('the folders opened last are offered first, after a reload; a path typed by hand still opens', async () => {
  const first = realpathSync(makeFolder());
  const second = realpathSync(makeFolder());
  const { page, errors } = await openHub();
  const input = page.locator('#folder-path');
  for (const folder of [first, second]) {
    // Typed whole and opened with Enter, as before the completion came.
    await input.fill(folder);
    await input.press('Enter');
    await expect(async () => assert.equal(await currentFolder(page), folder));
  }
  await page.reload();
  await page.waitForSelector('html[data-hydrated="true"]', { timeout: 10000 });
  await input.focus();
  await expect(async () => {
    const recent = (await offered(page)).filter(([, label]) => label === 'recent').map(([value]) => value);
    assert.deepEqual(recent.slice(0, 2), [second, first]);
  });

  await input.fill('/no/such/folder/at/all');
  await input.press('Enter');
  await expect(async () => assert.match(await page.getByTestId('open-folder-error').innerText(), /does not exist/));
  assert.deepEqual(errors, []);
});
