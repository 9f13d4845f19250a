-- A statement that uses a $n it does not declare.

-- name: Foo
-- Returns $1 and $2.
-- param $1 a bigint
SELECT $1::bigint AS a, $2::bigint AS b
