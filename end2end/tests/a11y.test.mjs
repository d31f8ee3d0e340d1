// axe-core (npm, locked) injected into the hub's pages in headless Chromium, in
// light and dark: the hub page with a card waiting, its sessions and the
// Changes panel open, highlighted code blocks and a highlighted diff, and the
// decisions page. Any violation fails the test, listed with the rule, its
// impact and the nodes it found.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { makeFolder, snapshot } from '../hub.mjs';
import { openChat, sendPrompt } from '../chat-page.mjs';
import { hubWithModel } from '../setup.mjs';
import { violations } from '../axe.mjs';
import { call, text } from '../fake-model.mjs';

const setup = hubWithModel();

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

/** An answer with a block in each of several languages, between them every kind of token. */
const CODE = [
  ['rust', '#[derive(Debug)]\n/// A point.\npub struct Point { x: f64, y: i32 }\nfn main() {\n    let s: &str = "hi\\n"; // note\n    println!("{s} {}", 42u8 as char);\n    let _ = Some(true).map(|b| !b);\n}'],
  ['diff', '--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-old line\n+new line\n context'],
  ['bash', '#!/bin/bash\nexport NAME="${1:-world}"\nfor f in *.rs; do echo "$f" | wc -l; done > out.txt'],
  ['json', '{"name": "hub", "count": 3, "ok": true, "none": null}'],
  ['toml', '[package]\nname = "app"  # the name\nversion = "0.1.0"\nedition = 2021'],
  ['yaml', 'jobs:\n  test: &anchor\n    runs-on: ubuntu-latest\n    steps: [1, "two", yes]'],
  ['html', '<!DOCTYPE html>\n<a href="/x" class=\'y\'>link &amp; text</a>\n<style>p { color: red; }</style>'],
  ['ts', 'interface A { b?: number }\nexport const f = async <T,>(x: T): Promise<T> => `${x}` as T; /* done */\nclass C extends D { @dec m() { return /re+gex/g.test(this.s); } }'],
  ['python', '@dataclass\nclass P(Base):\n    """Doc."""\n    def f(self, *a, **k) -> None:\n        return f"{self.x!r}" if 1e3 else None'],
  ['sql', "SELECT id, COUNT(*) FROM t WHERE name LIKE 'a%' GROUP BY id; -- all"],
  ['markdown', '# Title\n\n*em* **strong** `code` [link](http://x)\n\n- item\n> quote'],
  ['css', '@media (min-width: 1px) { .a > #b:hover::after { margin: 0 auto !important; content: "x"; } }'],
].map(([language, code]) => `\`\`\`${language}\n${code}\n\`\`\``).join('\n\n');

for (const scheme of ['light', 'dark']) {
  test(`no axe violation on highlighted code blocks and a highlighted diff, copy buttons pressed, in ${scheme}`, async () => {
    const folder = makeFolder();
    writeFileSync(join(folder, 'app.py'), 'import os\n\n# Greets.\ndef greet(name: str) -> str:\n    """Say hello."""\n    return "hi " + name  # old\n');
    setup.model.script(
      text(`Here:\n\n${CODE}\n`),
      call('e1', 'replace', {
        file_path: 'app.py',
        old_string: 'return "hi " + name  # old',
        new_string: 'return f"hello {name}!"  # new\n\n\n@staticmethod\ndef count(n: int = 0) -> bool:\n    return True',
      }),
    );
    const context = await setup.browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'] });
    const { page, errors } = await openChat(setup.browser, setup.hub, folder, { context });
    await page.emulateMedia({ colorScheme: scheme });
    await sendPrompt(page, 'show me code');
    const blocks = page.getByTestId('assistant-message').locator('pre > code');
    await expect(async () => assert.equal(await blocks.locator(':scope[data-highlighted]').count(), 12));
    await sendPrompt(page, 'edit it');
    const diff = page.getByTestId('approval-card').getByTestId('diff');
    await expect(async () => assert.equal(await diff.getAttribute('data-highlighted'), 'true'));
    assert.deepEqual(await violations(page), [], `highlighted code and diff in ${scheme}`);

    // The buttons' states: "Copied" on a code block, "Copy failed" beside the card's command.
    await page.getByRole('button', { name: 'Copy code' }).first().click();
    await page.getByText('Copied').first().waitFor();
    assert.deepEqual(await violations(page, '.code-head'), [], `a code block's "Copied" in ${scheme}`);
    assert.deepEqual(errors, []);
    await context.close();
  });
}
