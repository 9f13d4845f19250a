-- A file that configures: a fragment with arguments used inside another's argument, and a
-- statement with declared params and columns.

-- fragment: twice(x)
-- Doubles x.
({{x}} * 2)

-- fragment: sum(a, b)
-- Adds a and b.
({{a}} + {{b}})

-- name: FooBar
-- Returns 14.
-- Nested: sum(twice(3), least(4, 4)) is (6 + 4) … plus twice(2).
SELECT {{sum({{twice(3)}}, least(4, 4))}} + {{twice(2)}} AS n

-- name: Typed
-- Returns what it is given.
-- param $1 id bigint
-- param $2 name text?: NULL when none
-- column id bigint
-- column name text?
SELECT $1::bigint AS id, $2::text AS name
