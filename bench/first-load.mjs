// The first load of a folder's page (issue 16, "Light and instant"): what it
// downloads, how soon it is live, and how soon a click works.
//
//   bench/first-load [--quick] [--runs N] [--previous DIR] [--current DIR] [--json FILE]
//
// For the current build (HUB_BIN, default target/release/agent-hub, serving
// target/site; or, with --current, one kept by `bench/keep-build DIR`) and,
// with --previous, a kept one:
//  - every asset the page loaded, raw / gzip / brotli, split into the first
//    load (requested before html[data-hydrated]) and what came after; the
//    first load against bench/first-load-budget and the issue's goals;
//  - navigation -> hydrated and hydrated -> first working click, over N cold
//    loads (default 10, each in a fresh browser context);
//  - unless --quick, bench/open_session.mjs's figure (10,000 events).
// The page is a folder with a short seeded session, so the chat and its
// transcript load as they do for a user.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { brotliCompressSync, constants as zlibConstants, gzipSync } from 'node:zlib';
import { ROOT, startHub, launchBrowser } from '../end2end/hub.mjs';
import { measureOpenSession, seededFolder, stats } from './measure.mjs';

const GOALS = { gzip: 250_000, brotli: 200_000 };
const SESSION_EVENTS = 200;
const LONG_SESSION = { events: 10_000, runs: 5 };
const HYDRATION_DEADLINE_MS = 30_000;
const CLICK_DEADLINE_MS = 10_000;
// After hydration nothing says "done prefetching": the page counts as settled
// once it has requested nothing for this long.
const QUIET_MS = 1_500;
const SETTLE_DEADLINE_MS = 15_000;

// The first working click: the sidebar's "Open a folder" form, given a folder
// that does not exist. It is server-rendered, enabled from the start and needs
// no data, so it can be pressed the moment the page hydrates. Only the
// hydrated page shows the hub's error under it: before hydration, Open submits
// the form natively and the browser navigates away.
const FOLDER_INPUT = '#folder-path';
const OPEN_BUTTON = '[data-testid="open-folder-form"] button[type="submit"]';
const OPEN_ERROR = '[data-testid="open-folder-error"]';
const NO_SUCH_FOLDER = join(tmpdir(), 'first-load-bench-no-such-folder');

const FIRST_LOAD_KINDS = ['html', 'js', 'wasm', 'css'];
// bench/first-load-budget and scripts/test count js + wasm + css: the html is
// rendered per page.
const BUDGET_KINDS = ['js', 'wasm', 'css'];

const { values: options } = parseArgs({
  options: {
    previous: { type: 'string' },
    current: { type: 'string' },
    json: { type: 'string' },
    quick: { type: 'boolean', default: false },
    runs: { type: 'string', default: '10' },
    // Internal: measure one build (HUB_BIN, this site dir) and print its JSON.
    'one-build': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
const runs = Number(options.runs);
if (options.help || !Number.isInteger(runs) || runs < 1) {
  console.error('usage: bench/first-load [--quick] [--runs N] [--previous DIR] [--current DIR] [--json FILE]');
  process.exit(options.help ? 0 : 2);
}

async function main() {
  const kept = (label, dir) => ({ label, dir: resolve(dir), bin: resolve(dir, 'agent-hub'), site: resolve(dir, 'site') });
  const builds = [options.current ? kept('current build', options.current) : {
    label: 'current build',
    bin: resolve(process.env.HUB_BIN || join(ROOT, 'target/release/agent-hub')),
    site: join(ROOT, 'target/site'),
  }];
  if (options.previous) builds.push(kept('previous build', options.previous));
  for (const build of builds) {
    if (!existsSync(build.bin)) fail(`${build.label}: no binary at ${build.bin}`);
    if (!existsSync(build.site)) fail(`${build.label}: no site at ${build.site}`);
  }

  const budget = readBudget();
  const measured = [];
  for (const build of builds) {
    progress(`measuring the ${build.label}`);
    const result = await measureInChild(build).catch((error) => ({ failure: error.message }));
    if (result.failure) progress(`  not measured: ${result.failure}`);
    measured.push({ ...build, ...result });
  }

  const sections = measured.map((build) => formatBuild(build, budget));
  let comparison = null;
  if (measured.length === 2 && !measured.some((build) => build.failure)) {
    comparison = compare(measured[1], measured[0]);
    sections.push(formatComparison(comparison, `previous build (${shown(measured[1].dir)})`));
  }
  console.log(sections.join('\n\n'));

  if (options.json) {
    const report = { measuredAt: new Date().toISOString(), goals: GOALS, budget, builds: measured, comparison };
    writeFileSync(options.json, JSON.stringify(report, null, 2) + '\n');
    progress(`figures written to ${options.json}`);
  }
  // A figure of a broken page is no figure: any failure, page error or budget
  // overrun of the current build fails the run (the issue's goals are only reported).
  const current = measured[0];
  const broken = (build) => build.failure || build.pageErrors?.length || build.times?.clickFailed
    || build.times?.transcriptFailed || build.openSession?.failure;
  if (broken(current) || current.budgeted?.gzip > budget) process.exitCode = 1;
}

/**
 * end2end/hub.mjs reads HUB_BIN once, when it is imported: each build is
 * measured by a process of its own, which prints its figures as JSON.
 */
function measureInChild(build) {
  const args = [fileURLToPath(import.meta.url), '--one-build', build.site, '--runs', String(runs)];
  if (options.quick) args.push('--quick');
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, HUB_BIN: build.bin },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => { output += chunk; });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0) resolvePromise(JSON.parse(output));
      else reject(new Error(`the measuring process failed (exit ${code}, see above)`));
    });
  });
}

/** Everything about one build: the hub is HUB_BIN, serving `site`. */
async function measureBuild(site) {
  const session = seededFolder(SESSION_EVENTS);
  const hub = await startHub(['--site-root', site], {}, { dataDir: session.dataDir });
  const pageUrl = `${hub.base}/?folder=${encodeURIComponent(session.folder)}`;
  const browser = await launchBrowser();
  let chromium, assets, loads;
  try {
    chromium = browser.version();
    progress(`  recording the assets of ${pageUrl}`);
    assets = await recordAssets(browser, hub, pageUrl, site);
    loads = [];
    for (let run = 0; run < runs; run++) {
      progress(`  cold load ${run + 1}/${runs}`);
      loads.push(await timeLoad(browser, hub, pageUrl));
    }
  } finally {
    await browser.close();
    await hub.stop();
    session.remove();
  }

  let openSession = null;
  if (!options.quick) {
    progress(`  opening a ${LONG_SESSION.events}-event session, ${LONG_SESSION.runs} loads`);
    openSession = await measureOpenSession({ ...LONG_SESSION, hubArgs: ['--site-root', site], log: (line) => progress(`  ${line}`) })
      .catch((error) => ({ failure: error.message.split('\n')[0] }));
  }

  const worked = loads.filter((load) => load.click !== null);
  return {
    binBuiltAt: statSync(process.env.HUB_BIN).mtime.toISOString(),
    siteBuiltAt: newestFile(join(site, 'pkg'))?.toISOString() ?? null,
    chromium,
    sessionEvents: session.seeded.events,
    ...assets,
    loads,
    times: {
      hydrated: stats(loads.map((load) => load.hydrated)),
      firstClick: stats(worked.map((load) => load.click)),
      clickToEffect: stats(worked.map((load) => load.clickToEffect)),
      clickFailed: loads.length - worked.length,
      transcript: stats(loads.filter((load) => load.transcript !== null).map((load) => load.transcript)),
      transcriptFailed: loads.filter((load) => load.transcript === null).length,
    },
    pageErrors: unique([...assets.pageErrors, ...loads.flatMap((load) => load.pageErrors)]),
    openSession,
  };
}

/**
 * Runs before the page's own scripts. Every mark is `performance.now()` (or an
 * event's timeStamp, on the same clock): milliseconds since the navigation
 * started, on the page's clock, free of the driver's round trips to read them.
 */
function probe({ inputSelector, clickSelector, effectSelector, folder }) {
  const marks = (window.__firstLoad = {});
  new MutationObserver((_, observer) => {
    if (document.documentElement.dataset.hydrated === 'true') {
      marks.hydrated = performance.now();
      observer.disconnect();
      // The first click, made by the page itself in the next task: a driver's
      // fill and click take their own round trips (~0.5 s here), which are not
      // the page's. The click counts from its event's time.
      setTimeout(() => {
        const input = document.querySelector(inputSelector);
        input.value = folder;
        input.dispatchEvent(new Event('input', { bubbles: true }));
        document.querySelector(clickSelector).click();
      }, 0);
    }
  }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-hydrated'] });
  // The folder's transcript on screen: its chat comes from a part fetched after
  // hydration, and the answers from another, so this times what they cost cold.
  new MutationObserver((_, observer) => {
    if (document.querySelector('[data-testid="assistant-message"]')) {
      marks.transcript = performance.now();
      observer.disconnect();
    }
  }).observe(document, { subtree: true, childList: true });
  addEventListener('click', (event) => {
    if (marks.clicked !== undefined || !event.target.closest?.(clickSelector)) return;
    // The input's own time: a click queued behind a busy main thread counts
    // from when it was made, as the user feels it.
    marks.clicked = event.timeStamp;
    new MutationObserver((_, observer) => {
      if (document.querySelector(effectSelector)) {
        marks.effect = performance.now();
        observer.disconnect();
      }
    }).observe(document, { subtree: true, childList: true });
  }, true);
}

/**
 * A cold context that can reach the page. The token goes as a header: getting
 * the cookie would take a first load (filling the cache) or `/?token=`'s redirect.
 * No route() either: routing turns Chromium's cache off.
 */
async function coldPage(browser, hub) {
  const context = await browser.newContext({
    extraHTTPHeaders: { Authorization: `Bearer ${hub.token}` },
    serviceWorkers: 'block',
  });
  await context.addInitScript(probe, {
    inputSelector: FOLDER_INPUT, clickSelector: OPEN_BUTTON, effectSelector: OPEN_ERROR, folder: NO_SUCH_FOLDER,
  });
  const page = await context.newPage();
  const pageErrors = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  // A Rust panic reaches the console (console_error_panic_hook) with its
  // reason; the page error it then throws only says "unreachable".
  // Chromium's own "Failed to load resource" lines are left to the status check
  // below: the first click's answer is a 400 on purpose.
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) {
      pageErrors.push(message.text().split('\n').slice(0, 2).join(' '));
    }
  });
  // An asset the page asked for and did not get (a part of the wasm, say); the
  // API's answers are the page's to show.
  page.on('response', (response) => {
    const path = new URL(response.url()).pathname;
    if (response.status() >= 400 && !path.startsWith('/api/')) pageErrors.push(`HTTP ${response.status()} for ${path}`);
  });
  return { context, page, pageErrors };
}

/** Waits for hydration; returns its mark, or throws with what the page said. */
async function hydration(page, pageErrors) {
  const mark = page.waitForFunction(() => window.__firstLoad?.hydrated, null,
    { timeout: HYDRATION_DEADLINE_MS, polling: 'raf' });
  mark.catch(() => {}); // when the page dies first, nobody awaits it any more
  // A panic leaves a dead page: a second after one, stop waiting for it
  // rather than for the deadline.
  let watch;
  const dead = new Promise((resolvePromise) => {
    watch = setInterval(() => {
      if (pageErrors.length) {
        clearInterval(watch);
        setTimeout(resolvePromise, 1000);
      }
    }, 100);
  });
  let why;
  try {
    const hydrated = await Promise.race([mark, dead]);
    if (hydrated) return await hydrated.jsonValue();
    why = 'an error stopped it';
  } catch (error) {
    why = `not within ${HYDRATION_DEADLINE_MS / 1000} s`;
  } finally {
    clearInterval(watch);
  }
  const said = pageErrors.length ? ` (page errors: ${unique(pageErrors).join('; ')})` : '';
  throw new Error(`the page did not hydrate: ${why}${said}`);
}

/**
 * The first working click, made by the probe as soon as the page is hydrated
 * (the missing folder typed, Open pressed): says whether the hub's error showed.
 */
async function firstClick(page) {
  // A click that did not work leaves no error to wait for: a dead page, or a
  // native submit that navigated away (whose fresh probe has no marks).
  return page.waitForFunction(() => window.__firstLoad?.effect !== undefined, null,
    { timeout: CLICK_DEADLINE_MS, polling: 'raf' }).then(() => true, () => false);
}

/**
 * One load for the figures of its assets: every response, and when it was
 * requested. It makes the same click as the timed loads, so what the click
 * fetches (a chunk loaded on demand) is listed too.
 */
async function recordAssets(browser, hub, url, site) {
  const { context, page, pageErrors } = await coldPage(browser, hub);
  const isData = (address) => address.origin !== hub.base || address.pathname === '/api' || address.pathname.startsWith('/api/');
  const responses = [];
  let lastRequest = Date.now();
  let documents = 0;
  page.on('request', (request) => {
    lastRequest = Date.now();
    if (request.isNavigationRequest() && request.frame() === page.mainFrame()) documents++;
  });
  page.on('response', (response) => {
    // A click on a page that did not hydrate submits natively: the next
    // document's assets are not this load's.
    if (documents > 1) return;
    // Bodies are read at once: the browser drops them when the page navigates.
    const asset = !isData(new URL(response.url()));
    responses.push({
      response,
      body: asset ? response.body().catch(() => null) : null,
      sizes: asset ? response.request().sizes().catch(() => null) : null,
    });
  });
  await page.goto(url, { waitUntil: 'commit' });
  const hydrated = await hydration(page, pageErrors);
  const timeOrigin = await page.evaluate(() => performance.timeOrigin);
  await firstClick(page);
  const deadline = Date.now() + SETTLE_DEADLINE_MS;
  while (Date.now() - lastRequest < QUIET_MS && Date.now() < deadline) await sleep(100);

  const assets = [];
  const data = [];
  for (const { response, ...read } of responses) {
    const request = response.request();
    const address = new URL(response.url());
    // Request timing is wall-clock time, like timeOrigin: both in the browser.
    const at = round(request.timing().startTime - timeOrigin);
    if (isData(address)) {
      // Data for this folder, not part of the build: listed, not weighed (and
      // the updates stream never ends, so its body cannot be read).
      data.push({ method: request.method(), path: address.pathname, type: request.resourceType(), status: response.status(), at });
      continue;
    }
    const [body, sizes] = await Promise.all([read.body, read.sizes]);
    if (!body || !sizes) {
      // Left out of the totals, so the run fails rather than report a lighter page.
      pageErrors.push(`no body for ${address.pathname}: its size is unknown`);
      continue;
    }
    const kind = kindOf(response);
    assets.push({
      kind,
      path: kind === 'html' ? `${address.pathname}?folder=<seeded folder>` : address.pathname,
      status: response.status(),
      phase: at <= hydrated ? 'first' : 'after',
      at,
      raw: body.length,
      ...compressedSizes(site, kind === 'html' ? null : address.pathname, body),
      served: sizes.responseBodySize,
      encoding: response.headers()['content-encoding'] || 'identity',
    });
  }
  await context.close();
  assets.sort((a, b) => a.at - b.at);
  const first = assets.filter((asset) => asset.phase === 'first');
  return {
    hydratedAt: round(hydrated),
    assets,
    data,
    firstLoad: sum(first.filter((asset) => FIRST_LOAD_KINDS.includes(asset.kind))),
    budgeted: sum(first.filter((asset) => BUDGET_KINDS.includes(asset.kind))),
    // The favicon and such are listed but not totalled: the browser asks for
    // them when it likes, before or after hydration.
    afterHydration: sum(assets.filter((asset) => asset.phase === 'after' && FIRST_LOAD_KINDS.includes(asset.kind))),
    byKind: Object.fromEntries(FIRST_LOAD_KINDS.map((kind) => [kind, sum(first.filter((asset) => asset.kind === kind))])),
    pageErrors,
  };
}

function kindOf(response) {
  const type = response.headers()['content-type'] || '';
  if (response.request().resourceType() === 'document' || type.startsWith('text/html')) return 'html';
  if (type.includes('javascript')) return 'js';
  if (type.includes('wasm')) return 'wasm';
  if (type.startsWith('text/css')) return 'css';
  return 'other';
}

/**
 * gzip and brotli sizes: the .gz / .br files the build wrote beside the asset
 * (what the hub serves), else the body compressed here as scripts/build does
 * (gzip -9, brotli 11). A sibling whose asset no longer has the size that was
 * served belongs to a newer build written meanwhile, so it is not used.
 */
function compressedSizes(site, pathname, body) {
  const file = pathname && join(site, decodeURIComponent(pathname));
  const current = file && existsSync(file) && statSync(file).isFile() && statSync(file).size === body.length;
  const sibling = (suffix) => (current && existsSync(file + suffix) ? statSync(file + suffix).size : null);
  const gzip = sibling('.gz') ?? gzipSync(body, { level: 9 }).length;
  const brotli = sibling('.br')
    ?? brotliCompressSync(body, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 11 } }).length;
  return { gzip, brotli, precompressed: sibling('.gz') !== null && sibling('.br') !== null };
}

/** One cold load: navigation -> hydrated, then the first click, as soon as possible. */
async function timeLoad(browser, hub, url) {
  const { context, page, pageErrors } = await coldPage(browser, hub);
  try {
    // 'commit': the click goes in the moment the page is live, load event or not.
    await page.goto(url, { waitUntil: 'commit' });
    const hydrated = await hydration(page, pageErrors);
    const worked = await firstClick(page);
    const shown = await page.waitForFunction(() => window.__firstLoad?.transcript !== undefined, null,
      { timeout: CLICK_DEADLINE_MS, polling: 'raf' }).then(() => true, () => false);
    if (await page.getByTestId('part-missing').count()) pageErrors.push('the page said a part could not be loaded');
    const marks = await page.evaluate(() => window.__firstLoad);
    return {
      hydrated: round(hydrated),
      click: worked ? round(marks.effect - hydrated) : null,
      clickToEffect: worked ? round(marks.effect - marks.clicked) : null,
      transcript: shown ? round(marks.transcript) : null,
      pageErrors,
    };
  } finally {
    await context.close();
  }
}

function readBudget() {
  const file = join(ROOT, 'bench/first-load-budget');
  const number = readFileSync(file, 'utf8').split('\n').filter((line) => !line.startsWith('#')).join('').trim();
  return Number(number.replace(/[_,\s]/g, ''));
}

// ---- output -------------------------------------------------------------------

function formatBuild(build, budget) {
  const lines = [`${build.label}: ${shown(build.bin)} + ${shown(build.site)}`];
  if (build.failure) return [...lines, `  not measured: ${build.failure}`, ...panicHint([build.failure])].join('\n');
  lines.push(`  binary built ${when(build.binBuiltAt)}, site built ${when(build.siteBuiltAt)}; Chromium ${build.chromium}`);
  lines.push(`  page: /?folder=<a folder with a ${build.sessionEvents}-event session>, cold cache`);

  const assetRow = (asset) => [`  ${asset.kind.padEnd(5)} ${asset.path}`, bytes(asset.raw), bytes(asset.gzip), bytes(asset.brotli),
    `${bytes(asset.served)} ${encodingName(asset.encoding)}`, `${ms(asset.at)} ms`];
  const first = build.assets.filter((asset) => asset.phase === 'first');
  const after = build.assets.filter((asset) => asset.phase === 'after');
  const totalRow = (label, total) => [label, bytes(total.raw), bytes(total.gzip), bytes(total.brotli), bytes(total.served), ''];
  const rows = [
    ['first load (requested before hydration)', 'raw B', 'gzip B', 'brotli B', 'served B', 'requested'],
    ...first.map(assetRow),
    totalRow('  total: html + js + wasm + css', build.firstLoad),
    totalRow('  without the html (as the budget counts)', build.budgeted),
    [`after hydration (at ${ms(build.hydratedAt)} ms in this load)`, '', '', '', '', ''],
    ...(after.length ? after.map(assetRow) : [['  (nothing)', '', '', '', '', '']]),
  ];
  if (build.afterHydration.count) rows.push(totalRow('  total: html + js + wasm + css', build.afterHydration));
  lines.push('', table(rows));
  if (build.data.length) {
    const counted = countBy(build.data.map((request) => `${request.method} ${request.path}${request.type === 'eventsource' ? ' (stream)' : ''}`));
    lines.push(`  data, not counted: ${Object.entries(counted).map(([name, n]) => (n > 1 ? `${name} x${n}` : name)).join(', ')}`);
  }
  lines.push('  gzip/brotli: the .gz/.br the build wrote beside the asset, else compressed here (gzip -9, brotli 11)');

  const check = (label, value, limit) => [label, bytes(value), `<= ${bytes(limit)}`,
    value <= limit ? `met, ${bytes(limit - value)} to spare` : `NOT met, ${bytes(value - limit)} over`];
  lines.push('', table([
    ['budget and goals', 'first load B', 'limit B', ''],
    check('  bench/first-load-budget, gzip, without the html', build.budgeted.gzip, budget),
    check('  issue 16 goal, gzip', build.firstLoad.gzip, GOALS.gzip),
    check('  issue 16 goal, brotli', build.firstLoad.brotli, GOALS.brotli),
  ]));

  const { times } = build;
  const timeRow = (label, figure) => [label, ms(figure.median), ms(figure.min), ms(figure.max)];
  const timeRows = [
    [`times, ms (${build.loads.length} cold loads)`, 'median', 'min', 'max'],
    timeRow('  navigation -> hydrated', times.hydrated),
    timeRow('  hydrated -> first working click', times.firstClick),
    timeRow('    of which click -> its effect', times.clickToEffect),
    timeRow('  navigation -> the transcript on screen', times.transcript),
  ];
  if (build.openSession?.failure) {
    timeRows.push([`  open a ${bytes(LONG_SESSION.events)}-event session: failed`, '-', '-', '-']);
  } else if (build.openSession) {
    const open = build.openSession;
    timeRows.push(timeRow(`  open a ${bytes(open.events)}-event session (${open.count} loads)`, open));
  }
  lines.push('', table(timeRows));
  lines.push('  first working click: the page, as soon as it is hydrated, types a missing folder into the',
    '  sidebar\'s "Open a folder" and presses Open; until the hub\'s error shows (only a hydrated page',
    '  shows it). Timed in the page, from the click event\'s own time.');
  if (build.openSession) lines.push('  open a session: as bench/open_session.mjs (assets cached, to the last answer on screen)');
  if (build.openSession?.failure) lines.push(`  opening the session failed: ${build.openSession.failure}`);
  if (times.clickFailed) lines.push(`  the click did not work in ${times.clickFailed} of ${build.loads.length} loads`);
  if (times.transcriptFailed) lines.push(`  the transcript did not show in ${times.transcriptFailed} of ${build.loads.length} loads`);
  lines.push('  transcript: navigation to the first answer on screen (its chat and markdown are parts fetched after hydration)');
  if (build.pageErrors.length) {
    lines.push(`  PAGE ERRORS: ${build.pageErrors.join('; ')}`, ...panicHint(build.pageErrors));
  }
  return lines.join('\n');
}

function panicHint(errors) {
  return errors.some((error) => error.includes('hydration.rs'))
    ? ['  (a panic in hydration usually means the binary and the site come from different builds)'] : [];
}

/** Figure by figure, previous -> current. */
function compare(previous, current) {
  const row = (label, unit, get, depth = 0) => {
    const before = get(previous);
    const after = get(current);
    const known = before !== null && before !== undefined && after !== null && after !== undefined;
    return { label, depth, unit, previous: before ?? null, current: after ?? null,
      diff: known ? after - before : null, percent: known && before !== 0 ? ((after - before) / before) * 100 : null };
  };
  const rows = [
    row('first load raw', 'B', (build) => build.firstLoad.raw),
    row('first load gzip', 'B', (build) => build.firstLoad.gzip),
    row('first load brotli', 'B', (build) => build.firstLoad.brotli),
    ...FIRST_LOAD_KINDS.map((kind) => row(`${kind} gzip`, 'B', (build) => build.byKind[kind].gzip, 1)),
    row('js + wasm + css gzip, as budgeted', 'B', (build) => build.budgeted.gzip),
    row('after hydration gzip', 'B', (build) => build.afterHydration.gzip),
    row('navigation -> hydrated, median', 'ms', (build) => build.times.hydrated.median),
    row('hydrated -> first working click, median', 'ms', (build) => build.times.firstClick.median),
    row('click -> its effect, median', 'ms', (build) => build.times.clickToEffect.median, 1),
  ];
  if (previous.openSession?.median && current.openSession?.median) {
    rows.push(row(`open a ${bytes(current.openSession.events)}-event session, median`, 'ms', (build) => build.openSession.median));
  }
  return rows;
}

function formatComparison(rows, previousLabel) {
  const figure = (value, unit) => (value === null ? '-' : unit === 'B' ? bytes(value) : ms(value));
  const signed = (value, unit) => (value === null ? '-' : `${value > 0 ? '+' : ''}${figure(value, unit)}`);
  return [`current build vs ${previousLabel}`, '', table([
    ['', 'previous', 'current', 'diff', '%'],
    ...rows.map((row) => [`  ${'  '.repeat(row.depth)}${row.label} (${row.unit})`, figure(row.previous, row.unit), figure(row.current, row.unit),
      signed(row.diff, row.unit), row.percent === null ? '-' : `${row.percent > 0 ? '+' : ''}${row.percent.toFixed(1)} %`]),
  ])].join('\n');
}

/** Rows of cells: the first column left-aligned, the others right-aligned. */
function table(rows) {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => String(row[column] ?? '').length)));
  return rows.map((row) => row.map((cell, column) => (column === 0
    ? String(cell).padEnd(widths[column]) : String(cell).padStart(widths[column]))).join('  ').trimEnd()).join('\n');
}

// ---- small helpers --------------------------------------------------------------

function sum(assets) {
  const total = { raw: 0, gzip: 0, brotli: 0, served: 0, count: assets.length };
  for (const asset of assets) for (const key of ['raw', 'gzip', 'brotli', 'served']) total[key] += asset[key];
  return total;
}

function newestFile(dir) {
  if (!existsSync(dir)) return null;
  const times = readdirSync(dir).map((name) => statSync(join(dir, name)).mtime);
  return times.length ? new Date(Math.max(...times)) : null;
}

const bytes = (value) => (value === null || value === undefined ? '-' : Math.round(value).toLocaleString('en-US'));
const ms = (value) => (value === null || value === undefined ? '-' : Math.round(value).toLocaleString('en-US'));
const round = (value) => Math.round(value * 10) / 10;
const when = (iso) => (iso ? iso.slice(0, 16).replace('T', ' ') : 'unknown');
const encodingName = (encoding) => ({ identity: 'raw', gzip: 'gz', br: 'br' }[encoding] ?? encoding);
const shown = (path) => (isAbsolute(path) && !relative(ROOT, path).startsWith('..') ? relative(ROOT, path) || '.' : path);
const unique = (list) => [...new Set(list)];
const countBy = (list) => list.reduce((counts, item) => ({ ...counts, [item]: (counts[item] ?? 0) + 1 }), {});
const sleep = (delay) => new Promise((done) => setTimeout(done, delay));
const progress = (line) => process.stderr.write(`${line}\n`);

function fail(message) {
  console.error(`bench/first-load: ${message}`);
  process.exit(2);
}

// Last, so that every helper above is initialised when it runs.
if (options['one-build']) {
  if (!process.env.HUB_BIN) fail('--one-build measures the binary HUB_BIN names');
  // A build that cannot be measured (say, its page never hydrates) is a
  // finding to print beside the other build's figures, not a crash.
  const result = await measureBuild(resolve(options['one-build'])).catch((error) => ({ failure: error.message }));
  process.stdout.write(JSON.stringify(result));
} else {
  await main();
}
