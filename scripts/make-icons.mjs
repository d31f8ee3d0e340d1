#!/usr/bin/env node
// Draws the installable app's PNG icons from public/favicon.svg, in Chromium
// (playwright-core and Debian's chromium, as the end-to-end tests use; no
// image tool needed). Run it after changing the favicon, and commit the PNGs:
//   node scripts/make-icons.mjs        (CHROMIUM_PATH overrides /usr/bin/chromium)
// It writes into public/ (copied to the site root by scripts/build):
// - icon-192.png, icon-512.png: the favicon as it is (rounded, transparent corners);
// - icon-maskable-512.png: the same mark, three quarters its size, on a full
//   square of its blue: well inside the safe zone (the middle circle of 80 %),
//   so a launcher's circle or squircle never cuts it;
// - apple-touch-icon.png (180): the maskable drawing, opaque (iOS rounds it itself).
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

const ROOT = resolve(import.meta.dirname, '..');
const PUBLIC = join(ROOT, 'public');
const favicon = readFileSync(join(PUBLIC, 'favicon.svg'), 'utf8');
// The favicon's blue and its mark (the <path>), for the full-bleed drawing.
const blue = favicon.match(/<rect[^>]*fill="([^"]+)"/)[1];
const mark = favicon.match(/<path[^>]*\/>/)[0];
const maskable = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" fill="${blue}"/>`
  + `<g transform="translate(16 16) scale(0.75) translate(-16 -16)">${mark}</g></svg>`;

const icons = [
  ['icon-192.png', favicon, 192],
  ['icon-512.png', favicon, 512],
  ['icon-maskable-512.png', maskable, 512],
  ['apple-touch-icon.png', maskable, 180],
];

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  for (const [name, svg, size] of icons) {
    const page = await browser.newPage({ viewport: { width: size, height: size }, deviceScaleFactor: 1 });
    const url = `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`;
    await page.setContent(`<style>html,body{margin:0;background:transparent}img{display:block}</style><img src="${url}" width="${size}" height="${size}">`);
    await page.locator('img').evaluate((img) => img.decode());
    await page.screenshot({ path: join(PUBLIC, name), omitBackground: true });
    await page.close();
    console.log(`public/${name} (${size}×${size})`);
  }
} finally {
  await browser.close();
}
