-- name: Foo
-- One.
SELECT 1
