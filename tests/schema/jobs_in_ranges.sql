-- jobs_in_ranges.sql: bulkhead.jobs in ranges of a few ids each, for the tests that run the engine
-- where rows of several ranges share ctids. Applied to a freshly migrated database
-- (BULKHEAD_TEST_TEMPLATE_SQL, tests/harness/database_test.cc). Since migration 0021 jobs is in
-- ranges already: jobs_first, below the first id, and a default range for every other id. This
-- adds ranges of 4 ids each from id 1, through the leader's own bulkhead.add_job_range, so that
-- a test's first rows land in several ranges whose pages start at the same ctids: a statement
-- that reaches a row by its ctid alone reaches rows of other ranges too. A session may set
-- `bulkhead.test_ranges` (16) and `bulkhead.test_range_size` (4 ids) first: load/ranges_cost.sh
-- and plan_cost_test_on_ranges do. Every id above the ranges lands in the default range.
SELECT bulkhead.add_job_range(1 + n * s.size, 1 + (n + 1) * s.size)
  FROM (SELECT coalesce(current_setting('bulkhead.test_range_size', true), '4')::bigint AS size,
               coalesce(current_setting('bulkhead.test_ranges', true), '16')::int AS ranges) s,
       generate_series(0, s.ranges - 1) AS n;
