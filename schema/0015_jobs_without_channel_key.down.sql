-- 0015_jobs_without_channel_key, reversed: the foreign key from jobs to channels again (checked
-- against every row, which reads the whole table), and channels may be deleted where no job
-- refers to them.
DROP TRIGGER channels_never_truncated ON bulkhead.channels;
DROP TRIGGER channels_never_deleted ON bulkhead.channels;
DROP FUNCTION bulkhead.channels_never_deleted();
ALTER TABLE bulkhead.jobs ADD CONSTRAINT jobs_channel_id_fkey
  FOREIGN KEY (channel_id) REFERENCES bulkhead.channels (id) NOT VALID;
ALTER TABLE bulkhead.jobs VALIDATE CONSTRAINT jobs_channel_id_fkey;
