-- name: Foo
SELECT 1
