// "Notify this phone" (app/src/components/notify_phone.rs loads this file only
// when GET /api/push/key says this device may subscribe): asks for permission,
// subscribes with the hub's VAPID key and gives the subscription to the hub.
// Defines window.hubPush.subscribe(publicKey) -> Promise<'subscribed' | 'denied' | 'unsupported'>.
'use strict';

(() => {
  const bytes = (base64url) => {
    const base64 = base64url.replace(/-/g, '+').replace(/_/g, '/');
    const text = atob(base64 + '='.repeat((4 - (base64.length % 4)) % 4));
    return Uint8Array.from(text, (c) => c.charCodeAt(0));
  };

  const same = (a, b) => {
    if (!a || a.byteLength !== b.byteLength) return false;
    const view = new Uint8Array(a);
    return view.every((byte, i) => byte === b[i]);
  };

  // The page's service worker (importing /sw-push.js); this file's own alone if none is registered.
  const registration = async () => {
    if (!(await navigator.serviceWorker.getRegistration('/'))) {
      await navigator.serviceWorker.register('/sw-push.js');
    }
    return navigator.serviceWorker.ready;
  };

  const subscribe = async (publicKey) => {
    if (!('serviceWorker' in navigator) || !('PushManager' in window) || !('Notification' in window)) {
      return 'unsupported';
    }
    // First, while the click's gesture still counts (Safari asks for it).
    const permission = await Notification.requestPermission();
    if (permission !== 'granted') return 'denied';
    const key = bytes(publicKey);
    const worker = await registration();
    let subscription = await worker.pushManager.getSubscription();
    // One made for another key (the hub's key file was remade) is replaced.
    if (subscription && !same(subscription.options.applicationServerKey, key)) {
      await subscription.unsubscribe();
      subscription = null;
    }
    if (!subscription) {
      subscription = await worker.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
    }
    const response = await fetch('/api/push/subscribe', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(subscription),
    });
    if (!response.ok) {
      const error = await response.json().catch(() => ({}));
      throw new Error(error.message || `The hub answered ${response.status}.`);
    }
    return 'subscribed';
  };

  window.hubPush = { subscribe };
})();
