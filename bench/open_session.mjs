// Time to open a session of 10,000 events in the UI (goal: at most 1 s).
//
// A session of at least 10,000 events is written into a fresh data dir, a hub is
// started on it, and a fresh Chromium tab opens the folder; the time is from
// navigation to the last answer being on screen in a hydrated page.
// Run after a build: `node bench/open_session.mjs` (HUB_BIN picks the binary).
// bench/first-load.mjs prints the same figure beside the first load's.
import { measureOpenSession } from './measure.mjs';

const TARGET_EVENTS = 10_000;
const RUNS = 5;

const result = await measureOpenSession({ events: TARGET_EVENTS, runs: RUNS, log: console.log });
console.log(`open a ${result.events}-event session: median ${result.median} ms, best ${result.min} ms, worst ${result.max} ms over ${RUNS} loads`);
console.log(`goal <= 1000 ms: ${result.median <= 1000 ? 'met' : 'NOT met'}`);
