// Agent Hub's service worker (docs/working.md "On a phone"): it caches the shell only.
// Not guarded: a failed import fails the install, and the browser tries again later,
// rather than keeping a worker without its push handlers.
importScripts('/sw-push.js');

// What it keeps: the bundle under /pkg/ (js, wasm, css), the icons, the manifest
// and the offline page. Never an /api/ answer (they are not even passed through
// this worker) and never a page (pages carry the user's sessions): a navigation
// goes to the network, and only when the hub cannot be reached is the offline
// page shown in its place. A new VERSION empties the older caches on activation.
const VERSION = 1;
const CACHE = `agent-hub-shell-v${VERSION}`;
const OFFLINE = '/offline.html';
const PRECACHE = [OFFLINE, '/manifest.webmanifest', '/favicon.svg', '/icon-192.png', '/icon-512.png',
  '/icon-maskable-512.png', '/apple-touch-icon.png'];
const SHELL_FILES = new Set(PRECACHE);
// A part of the split wasm, or its loader, is named by its content (scripts/lib.sh
// name_parts_by_content): the same name never changes, so it is taken from the cache first.
const BY_CONTENT = /^\/pkg\/(.+)\.[0-9a-f]{16}\.(wasm|js)$/;

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(PRECACHE)).then(() => self.skipWaiting()));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(caches.keys().then((names) => Promise.all(
    names.filter((name) => name.startsWith('agent-hub-shell-') && name !== CACHE).map((name) => caches.delete(name)),
  )));
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin || url.pathname === '/api' || url.pathname.startsWith('/api/')) return;
  if (request.mode === 'navigate') {
    // Network only; the offline page when the hub does not answer at all.
    event.respondWith(fetch(request).catch(() => caches.match(OFFLINE)));
    return;
  }
  const part = url.pathname.match(BY_CONTENT);
  if (part) {
    event.respondWith(caches.match(request).then((cached) => cached || fetchAndKeep(event, part[1])));
  } else if (url.pathname.startsWith('/pkg/') || SHELL_FILES.has(url.pathname)) {
    // One name across builds (agent_hub.js, .wasm, .css, the highlighter): the
    // network first, so a rebuilt hub never meets an older bundle; the cache
    // when the hub cannot be reached.
    event.respondWith(fetchAndKeep(event).catch(() => caches.match(request).then((cached) => cached || Response.error())));
  }
});

/**
 * Fetches and keeps a good answer (written while the page already reads it);
 * a part (`partName`) replaces its other builds' copies.
 */
async function fetchAndKeep(event, partName) {
  const request = event.request;
  const response = await fetch(request);
  // Never what a redirect led to (a refused device is sent to the pairing page),
  // and a part only as the script or wasm it names.
  const type = response.headers.get('content-type') || '';
  const fits = !partName || /javascript|wasm/.test(type);
  if (response.ok && response.type === 'basic' && !response.redirected && fits && !new URL(request.url).search) {
    const copy = response.clone();
    event.waitUntil(caches.open(CACHE).then(async (cache) => {
      if (partName) {
        for (const old of await cache.keys()) {
          const match = new URL(old.url).pathname.match(BY_CONTENT);
          if (match && match[1] === partName && old.url !== request.url) await cache.delete(old);
        }
      }
      await cache.put(request, copy);
    }));
  }
  return response;
}
