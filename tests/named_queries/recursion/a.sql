-- fragment: loop
-- Uses itself.
{{loop}} + 1

-- name: Foo
-- Never ends.
SELECT {{loop}}
