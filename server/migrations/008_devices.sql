-- Devices paired with the remote listener (--remote). The secret is kept only
-- as its SHA-256; revoking deletes the row and the device's push subscriptions.
CREATE TABLE devices (
  id TEXT PRIMARY KEY NOT NULL,
  name TEXT NOT NULL,
  secret_sha256 TEXT NOT NULL,
  paired_at_ms INTEGER NOT NULL,
  last_seen_ms INTEGER NOT NULL,
  last_address TEXT NOT NULL DEFAULT ''
);

-- A paired device's Web Push subscription (the browser's PushSubscription):
-- where to send, and the keys to encrypt for (RFC 8291).
CREATE TABLE push_subscriptions (
  endpoint TEXT PRIMARY KEY NOT NULL,
  device_id TEXT NOT NULL,
  p256dh TEXT NOT NULL,
  auth TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL
);
CREATE INDEX push_subscriptions_device ON push_subscriptions(device_id);
