-- Fragments of SQL that statements of several stores share, written once (format: see
-- claim_store.sql). A statement uses one as `{{name}}`, or `{{name(arg, …)}}` when it takes
-- arguments, which its body names `{{param}}`; the build substitutes them at configure time, so
-- the prepared SQL is what it was when each statement spelled them out.

-- fragment: utc(column)
-- A timestamptz as UTC ISO 8601 text, as the CLI prints it: 2026-01-31T12:00:00Z.
to_char({{column}} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
