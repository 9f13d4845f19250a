-- A statement whose params are not declared in $n order.

-- name: Foo
-- Returns $1 and $2.
-- param $2 b bigint
-- param $1 a bigint
SELECT $1::bigint AS a, $2::bigint AS b
