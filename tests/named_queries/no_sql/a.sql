-- name: Foo
-- A contract and nothing else.

-- name: Bar
-- One.
SELECT 1
