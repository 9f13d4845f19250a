-- 0004_secrets: secret rotation (Standard Webhooks: a sender may sign with several secrets).
--
-- A channel keeps its current secret in channels.secret, as before: enqueue, `channel add` and
-- everything that reads the current secret are unchanged. `bulkhead channel rotate-secret`
-- moves the current secret here, with the end of the window in which receivers may still know
-- only it, and puts a new one in channels.secret. Until then the worker signs each request with
-- the current secret and every old one not yet expired (docs/adr/0008-secret-rotation.md).
CREATE TABLE bulkhead.channel_secrets (
  channel_id  bigint      NOT NULL REFERENCES bulkhead.channels (id) ON DELETE CASCADE,
  secret      text        NOT NULL
              -- the shape channels_secret_format asks of a current secret: every old secret
              -- was one
              CONSTRAINT channel_secrets_secret_format
              CHECK (secret ~ '^whsec_(?:[A-Za-z0-9+/]{4}){8,}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$'),
  -- retired_at: when it stopped being the current secret (signatures are listed newest first);
  -- expires_at: the end of its window. Expired rows are ignored by the claim and deleted by the
  -- maintenance leader.
  retired_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  -- The primary key is also the claim's lookup: a channel's old secrets, by channel_id.
  CONSTRAINT channel_secrets_pkey PRIMARY KEY (channel_id, secret),
  CONSTRAINT channel_secrets_expire_after_retiring CHECK (expires_at > retired_at)
);
COMMENT ON TABLE bulkhead.channel_secrets IS
  'Old secrets of a channel, still signed with until expires_at (secret rotation).';

-- The claim's gate: the latest expires_at of the channel's old secrets, NULL when it has none.
-- The claim looks old secrets up only for claimed rows whose channel has old_secrets_until in
-- the future, so a fleet that never rotates pays one NULL column per claimed row and no lookup.
-- Kept by rotate-secret (which sets it) and the leader's prune (which clears it once past).
ALTER TABLE bulkhead.channels ADD COLUMN old_secrets_until timestamptz;

-- The leader's prune finds channels whose window has passed without reading every channel.
CREATE INDEX channels_old_secrets_until ON bulkhead.channels (old_secrets_until)
  WHERE old_secrets_until IS NOT NULL;
