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
