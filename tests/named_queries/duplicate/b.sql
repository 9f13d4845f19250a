-- name: Foo
-- Two.
SELECT 2
