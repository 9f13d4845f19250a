-- name: Foo
-- Uses a fragment nobody defined.
SELECT {{nope}}
