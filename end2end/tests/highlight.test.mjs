// Code looks like code: the agent's code blocks and the diffs of its edits are
// highlighted by a script the page fetches only once such code is on screen,
// and code blocks and a card's command have copy buttons. In real headless
// Chromium against a real hub and a scripted model; the clipboard is read back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from './expect.mjs';
import { makeFolder, snapshot } from '../hub.mjs';
import { openChat, sendPrompt } from '../chat-page.mjs';
import { hubWithModel } from '../setup.mjs';
import { call, text } from '../fake-model.mjs';

const setup = hubWithModel();

const HIGHLIGHTER = '/pkg/highlighter.js';

/** A fresh context whose pages may use the clipboard; `requests` gets every path it fetches. */
async function clipboardContext(options = {}) {
  const context = await setup.browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'], ...options });
  const requests = [];
  context.on('request', (request) => requests.push(new URL(request.url()).pathname));
  return { context, requests };
}

const clipboard = (page) => page.evaluate(() => navigator.clipboard.readText());
const highlighterFetches = (requests) => requests.filter((path) => path === HIGHLIGHTER).length;

test('the highlighter is fetched only once code is on screen; a rust block is highlighted and Copy code copies it exactly', async () => {
  const folder = makeFolder();
  const rust = 'fn main() {\n    let greeting = "hi <b>&</b>";\n    println!("{greeting}");\n}';
  const html = '<script>window.__injected = 1</script>\n<img src=x onerror="window.__injected = 2">';
  setup.model.script(
    text('No code here: just **words**, a list\n\n- one\n- two\n\nand `inline` code.'),
    text(`Here it is:\n\n\`\`\`rust\n${rust}\n\`\`\`\n\nand a page:\n\n\`\`\`html\n${html}\n\`\`\`\n`),
  );
  const { context, requests } = await clipboardContext();
  const { page, errors } = await openChat(setup.browser, setup.hub, folder, { context });

  await sendPrompt(page, 'say something');
  await expect(async () => assert.match(await page.getByTestId('assistant-message').innerText(), /just words/));
  // The answer is on screen, its markdown rendered: nothing asks for the highlighter.
  await page.waitForTimeout(500);
  assert.equal(highlighterFetches(requests), 0, 'fetched for a page without code');
  assert.equal(await page.evaluate(() => typeof window.hubHighlight), 'undefined');

  await sendPrompt(page, 'show me rust');
  const answer = page.getByTestId('assistant-message').nth(1);
  const code = answer.locator('pre > code').first();
  await expect(async () => assert.equal(await code.locator('.hljs-keyword').first().innerText(), 'fn'));
  assert.equal(highlighterFetches(requests), 1);
  assert.equal(await code.getAttribute('data-highlighted'), 'rust');
  assert.equal(await code.textContent(), `${rust}\n`, 'the text is the code, only marked up');
  assert.equal(await code.locator('.hljs-string').first().innerText(), '"hi <b>&</b>"');
  assert.equal(await code.locator('b').count(), 0, 'text in the code is never HTML');
  assert.equal(await answer.locator('.code-language').first().innerText(), 'rust');
  const colour = (locator) => locator.evaluate((element) => getComputedStyle(element).color);
  assert.notEqual(await colour(code.locator('.hljs-keyword').first()), await colour(code), 'the tokens\' colours came with the highlighter');

  // The HTML block is highlighted as HTML, and stays text.
  const htmlBlock = answer.locator('pre > code').nth(1);
  await expect(async () => assert.equal(await htmlBlock.getAttribute('data-highlighted'), 'xml'));
  assert.ok((await htmlBlock.locator('.hljs-name').allInnerTexts()).includes('script'));
  assert.equal(await answer.locator('script, img').count(), 0);
  assert.equal(await page.evaluate(() => window.__injected), undefined);
  assert.equal(await htmlBlock.textContent(), `${html}\n`);

  const copy = answer.locator('button[data-copy="code"]').first();
  assert.equal(await answer.getByRole('button', { name: 'Copy code' }).count(), 2, 'one per block, named for what it does');
  await copy.click();
  await expect(async () => assert.equal(await copy.innerText(), 'Copied'));
  assert.equal(await clipboard(page), rust, 'the code between the fences, not its HTML');
  assert.equal(await answer.getByRole('status').first().innerText(), 'Copied');
  await snapshot(page, 'highlight-code-light');
  await page.emulateMedia({ colorScheme: 'dark' });
  await snapshot(page, 'highlight-code-dark');
  await expect(async () => assert.equal(await copy.innerText(), 'Copy'), { timeout: 5000 });
  assert.equal(await copy.getAttribute('aria-label'), 'Copy code');

  // By keyboard: the button takes the focus and Enter presses it.
  await page.evaluate(() => navigator.clipboard.writeText('something else'));
  await copy.focus();
  await page.keyboard.press('Enter');
  await expect(async () => assert.equal(await clipboard(page), rust));
  assert.equal(highlighterFetches(requests), 1, 'loaded once for every block');
  assert.equal(await page.evaluate((src) => document.querySelectorAll(`script[src="${src}"]`).length, HIGHLIGHTER), 1);
  assert.deepEqual(errors, []);
  await context.close();
});

test('Enter on an answer\'s Copy code copies, and a waiting question does not take it as its answer', async () => {
  const folder = makeFolder();
  setup.model.script(
    text('Try:\n\n```rust\nfn main() {}\n```\n'),
    call('q1', 'ask_user', { prompt: 'Which license?', input_type: 'choice', choices: ['MIT', 'Apache-2.0'] }),
  );
  const { context } = await clipboardContext();
  const { page, errors } = await openChat(setup.browser, setup.hub, folder, { context });
  await sendPrompt(page, 'show me');
  const copy = page.getByTestId('assistant-message').locator('button[data-copy="code"]');
  await copy.waitFor();
  await sendPrompt(page, 'ask me');
  await page.getByTestId('question-choice').first().waitFor();
  const asked = setup.model.requests.length;

  await copy.focus();
  await page.keyboard.press('Enter');
  await expect(async () => assert.equal(await clipboard(page), 'fn main() {}'));
  await page.waitForTimeout(300);
  assert.equal(await page.getByTestId('question-choice').count(), 2, 'the question still waits');
  assert.equal(setup.model.requests.length, asked, 'no answer went to the agent');
  assert.deepEqual(errors, []);
  await context.close();
});

test("an edit card's diff is highlighted as its file's language, each line in the whole file's context", async () => {
  const folder = makeFolder();
  writeFileSync(join(folder, 'tool.py'), 'def greet(name):\n    """Say hello\n    to someone."""\n    return "hi " + name\n');
  setup.model.script(
    call('e1', 'replace', { file_path: 'tool.py', old_string: 'return "hi " + name', new_string: 'return f"hello {name}"' }),
    call('w1', 'write_file', { file_path: 'src/lib.rs', content: 'pub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n' }),
    text('Both done.'),
  );
  const { context, requests } = await clipboardContext();
  const { page, errors } = await openChat(setup.browser, setup.hub, folder, { context });
  await sendPrompt(page, 'edit the files');

  const card = page.getByTestId('approval-card');
  const diff = card.getByTestId('diff');
  await expect(async () => assert.equal(await diff.getAttribute('data-highlighted'), 'true'));
  assert.equal(await card.getByTestId('diff-path').innerText(), 'tool.py');
  // Line numbers and signs as before; the text in tokens.
  assert.equal(await card.getByTestId('diff-removed').innerText(), '4\t\t-\t    return "hi " + name');
  assert.equal(await card.getByTestId('diff-added').innerText(), '\t4\t+\t    return f"hello {name}"');
  assert.equal(await card.getByTestId('diff-removed').locator('.hljs-string').innerText(), '"hi "');
  assert.equal(await card.getByTestId('diff-added').locator('.hljs-keyword').innerText(), 'return');
  const context3 = card.getByTestId('diff-same').nth(2);
  assert.equal(await context3.innerText(), '3\t3\t\t    to someone."""');
  assert.equal(
    await context3.locator('.hljs-string').innerText(),
    '    to someone."""',
    'the docstring begun on line 2 is still a string on line 3',
  );
  await snapshot(page, 'highlight-diff-light');
  await page.emulateMedia({ colorScheme: 'dark' });
  await snapshot(page, 'highlight-diff-dark');

  await page.keyboard.press('1');
  await expect(async () => assert.equal(await card.getByTestId('diff-path').innerText(), 'src/lib.rs'));
  await expect(async () => assert.equal(await card.getByTestId('diff').getAttribute('data-highlighted'), 'true'));
  const first = card.getByTestId('diff-added').first();
  assert.equal(await first.innerText(), '\t1\t+\tpub fn add(a: u32, b: u32) -> u32 {');
  assert.deepEqual(await first.locator('.hljs-keyword').allInnerTexts(), ['pub', 'fn']);
  assert.deepEqual(await first.locator('.hljs-type').allInnerTexts(), ['u32', 'u32', 'u32']);
  assert.equal(highlighterFetches(requests), 1);
  assert.deepEqual(errors, []);
  await context.close();
});

test("a shell card's Copy command copies the whole command; Enter on it copies and decides nothing; c presses it", async () => {
  const folder = makeFolder();
  const command = Array.from({ length: 10 }, (_, i) => `echo "step ${i + 1}" >> 'build log.txt'`).join(' &&\n');
  setup.model.script(call('s1', 'run_shell_command', { command }), text('Ran it.'));
  const { context } = await clipboardContext();
  const { page, errors } = await openChat(setup.browser, setup.hub, folder, { context });
  await sendPrompt(page, 'run the steps');

  const card = page.getByTestId('approval-card');
  await card.waitFor();
  const copy = card.getByRole('button', { name: 'Copy command' });
  await copy.click();
  await expect(async () => assert.equal(await card.locator('button.copy-button').innerText(), 'Copied'));
  assert.equal(await clipboard(page), command, 'the whole command, though the card folds it');

  const asked = setup.model.requests.length;
  await page.evaluate(() => navigator.clipboard.writeText('something else'));
  const button = card.locator('button.copy-button');
  await button.focus();
  await page.keyboard.press('Enter');
  await expect(async () => assert.equal(await clipboard(page), command));
  await page.keyboard.press(' ');
  await page.waitForTimeout(300);
  assert.ok(await card.isVisible(), 'the card still waits: Enter and Space were the button\'s');
  assert.equal(await card.getAttribute('data-tool-id'), 's1');
  assert.equal(setup.model.requests.length, asked, 'nothing was decided, the model was not asked again');

  // The card keeps Tab for its choices; its key c presses Copy command.
  await page.evaluate(() => navigator.clipboard.writeText('something else'));
  await page.evaluate(() => document.activeElement?.blur());
  assert.match(await card.innerText(), /c Copy command/);
  await page.keyboard.press('c');
  await expect(async () => assert.equal(await clipboard(page), command));
  assert.equal(await card.getAttribute('data-tool-id'), 's1', 'still waiting');
  await snapshot(page, 'highlight-command-copied');
  assert.deepEqual(errors, []);
  await context.close();
});

test('a copy that fails says so; a block in no known language stays plain and fetches nothing', async () => {
  const folder = makeFolder();
  setup.model.script(text('Plain:\n\n```text\nnothing to colour\n```\n'));
  const { context, requests } = await clipboardContext();
  await context.addInitScript(() => {
    navigator.clipboard.writeText = () => Promise.reject(new DOMException('Write permission denied.', 'NotAllowedError'));
  });
  const { page, errors } = await openChat(setup.browser, setup.hub, folder, { context });
  await sendPrompt(page, 'say it plainly');

  const answer = page.getByTestId('assistant-message');
  const copy = answer.getByRole('button', { name: 'Copy code' });
  await copy.click();
  const button = answer.locator('button[data-copy="code"]');
  await expect(async () => assert.equal(await button.innerText(), 'Copy failed'));
  assert.equal(await button.getAttribute('aria-label'), 'Copy failed: Write permission denied.');
  assert.equal(await answer.getByRole('status').innerText(), 'Copy failed: Write permission denied.');
  assert.equal(await answer.locator('.code-language').innerText(), '');
  assert.equal(await answer.locator('pre > code').getAttribute('data-highlighted'), null);
  assert.equal(highlighterFetches(requests), 0);
  assert.deepEqual(errors, []);
  await context.close();
});
