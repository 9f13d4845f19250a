SELECT 0

-- name: Foo
-- One.
SELECT 1
