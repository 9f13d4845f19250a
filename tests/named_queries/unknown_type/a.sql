-- A statement with a column of a type the table has no C++ type for.

-- name: Foo
-- Returns a point.
-- column p point
SELECT point(1, 2) AS p
