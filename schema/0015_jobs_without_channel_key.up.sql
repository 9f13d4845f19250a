-- 0015_jobs_without_channel_key: bulkhead.jobs.channel_id loses its foreign key; channels are
-- never deleted instead (issue 30, goals 1 and 2; ADR 0023).
--
-- Why. A foreign key checks every inserted row with SELECT … FOR KEY SHARE on the referenced
-- channel row. That lock is written into the channel's row: a WAL record per enqueue, and when
-- two transactions hold it at once (two application commits enqueueing to one channel, the
-- common shape of a burst) PostgreSQL makes a MultiXact of them, one more per locker. Measured
-- with durability on, 16 clients, one enqueue per transaction (load/enqueue_cost.sh, case
-- "hot"): 705–719 WAL bytes an enqueue with the key against 529 without, and a MultiXact for
-- nearly every enqueue to the hot channel (33,206 in 10 s); over 100 channels 622 against 558
-- bytes. MultiXacts are the application's to vacuum and to freeze.
--
-- What the key guarded is kept another way:
--   * an unknown channel: enqueue, enqueue_many and publish look the channel up (route()) and
--     raise 23503 themselves, as they did before any insert;
--   * a channel deleted under its jobs: Bulkhead never deletes a channel (it disables it), and
--     now neither can anyone else. A DELETE or TRUNCATE of bulkhead.channels raises 23503,
--     the SQLSTATE the key gave a channel with jobs. A jobs row whose channel is gone would
--     never be claimed again.
-- Nothing else writes bulkhead.jobs.channel_id: the application's roles have no INSERT on jobs
-- (migration 0009), and the nodes never set it.

ALTER TABLE bulkhead.jobs DROP CONSTRAINT jobs_channel_id_fkey;

CREATE FUNCTION bulkhead.channels_never_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'bulkhead.channels: a channel is never deleted, since jobs refer to it; disable it instead (bulkhead channel disable ID --reason TEXT)'
    USING ERRCODE = 'foreign_key_violation';
END
$$;
CREATE TRIGGER channels_never_deleted BEFORE DELETE ON bulkhead.channels
  FOR EACH ROW EXECUTE FUNCTION bulkhead.channels_never_deleted();
CREATE TRIGGER channels_never_truncated BEFORE TRUNCATE ON bulkhead.channels
  FOR EACH STATEMENT EXECUTE FUNCTION bulkhead.channels_never_deleted();
