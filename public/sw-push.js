// Agent Hub's Web Push, in the service worker (docs/API.md, "Notifications").
// Pulled into the hub's service worker with importScripts('/sw-push.js'); it also
// works registered alone. A push is the hub's PushMessage {title, body, url, tag},
// decrypted by the browser; a click focuses an open hub tab on that session, or opens one.
'use strict';

self.addEventListener('push', (event) => {
  let message = {};
  try {
    message = event.data ? event.data.json() : {};
  } catch (_) {
    message = { body: event.data ? event.data.text() : '' };
  }
  event.waitUntil(
    self.registration.showNotification(message.title || 'Agent Hub', {
      body: message.body || '',
      // One notification per session: a newer one replaces it, and says so.
      tag: message.tag || undefined,
      renotify: Boolean(message.tag),
      icon: '/favicon.svg',
      data: { url: message.url || '/' },
    }),
  );
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  // The page and query only, on this worker's own origin: a click never leaves the hub.
  const given = new URL((event.notification.data && event.notification.data.url) || '/', self.location.origin);
  // One leading slash: `//evil.test/x` or `/\\evil.test` would otherwise name another host.
  const path = '/' + given.pathname.replace(/^[\/\\]+/, '');
  const candidate = new URL(path + given.search, self.location.origin);
  const target = candidate.origin === self.location.origin ? candidate.href : new URL('/', self.location.origin).href;
  event.waitUntil(
    (async () => {
      const tabs = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
      const tab = tabs.find((client) => new URL(client.url).origin === self.location.origin);
      if (tab) {
        await tab.focus();
        if (tab.url !== target && 'navigate' in tab) {
          // Only a tab this worker controls may be navigated; another just comes to the front.
          await tab.navigate(target).catch(() => {});
        }
        return;
      }
      await self.clients.openWindow(target);
    })(),
  );
});
