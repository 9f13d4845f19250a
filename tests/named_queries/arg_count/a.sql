-- fragment: twice(x)
-- Doubles x.
{{x}} * 2

-- name: Foo
-- Forgets the argument.
SELECT {{twice}}
