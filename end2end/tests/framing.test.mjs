// No page of the hub renders inside another site's frame (issue 39, item
// 9a): a page on another port of the same host framed the hub invisibly and
// one tap approved a card. Real Chromium, a real second server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { hubAndBrowser } from '../setup.mjs';

const setup = hubAndBrowser();

test('a page on another port cannot show the hub in a frame', async () => {
  const framer = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<!doctype html><title>framer</title><iframe id="hub" src="${setup.hub.url}" width="800" height="600"></iframe>`);
  });
  await new Promise((done) => framer.listen(0, '127.0.0.1', done));
  try {
    const page = await (await setup.browser.newContext()).newPage();
    await page.goto(`http://127.0.0.1:${framer.address().port}/`);
    await page.waitForTimeout(2000);
    const framed = page.frames().find((frame) => frame !== page.mainFrame());
    assert.ok(framed, 'the iframe is there');
    // The refusal itself, not a failed load: Chromium puts its error page in the frame.
    assert.match(framed.url(), /^chrome-error:/, `the frame shows: ${framed.url()}`);
    // Blocked: Chromium shows its error page in the frame, never the hub's.
    const text = await framed.evaluate(() => document.body?.innerText ?? '').catch(() => '');
    assert.doesNotMatch(text, /Agent Hub|Open a folder/i, `the hub rendered in the frame: ${text.slice(0, 200)}`);
    const hubElements = await framed.evaluate(() => document.querySelectorAll('[data-testid]').length).catch(() => 0);
    assert.equal(hubElements, 0, 'none of the hub\'s page is in the frame');
    await page.context().close();
  } finally {
    framer.close();
  }
});

// A tight script-src (issue 39, item 9a): the page hydrates under it (its own
// scripts carry the response's nonce; the wasm may compile), and a script put
// into the page without the nonce does not run, nor does an inline handler.
test('the page hydrates under its script policy and an injected script does not run', async () => {
  const context = await setup.browser.newContext();
  const page = await context.newPage();
  const violations = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
  await page.goto(setup.hub.url);
  await page.waitForSelector('html[data-hydrated="true"]', { timeout: 10000 });
  assert.deepEqual(violations, [], 'the page\'s own scripts run under the policy');
  const ran = await page.evaluate(async () => {
    const script = document.createElement('script');
    script.textContent = 'window.__injected = true';
    document.head.appendChild(script);
    const image = document.createElement('img');
    image.setAttribute('onerror', 'window.__handler = true');
    image.src = 'data:,broken';
    document.body.appendChild(image);
    await new Promise((done) => setTimeout(done, 300));
    return { injected: window.__injected === true, handler: window.__handler === true };
  });
  assert.deepEqual(ran, { injected: false, handler: false });
  assert.ok(violations.length >= 1, 'Chromium reports the refusal');
  await context.close();
});
