-- name: foo_bar
-- snake_case is for fragments.
SELECT 1
