-- A joinery_upsert model on delta whose enforced contract declares constraints (a not_null column
-- and a check, _upsert_constraints__models.yml): python_tests/test_constraints.py builds it, then
-- lands rows that break them. Its rows come from the env var JOINERY_CONSTRAINT_ROWS, `(id, amount)`
-- tuples. Built only with --vars '{upsert_constraints: true}'.
{{ config(
    enabled=var('upsert_constraints', false), materialized='joinery_upsert',
    file_format='delta', unique_key='id', contract={'enforced': true}
) }}

select
    cast(id as int) as id,
    cast(amount as int) as amount
from values {{ env_var('JOINERY_CONSTRAINT_ROWS', '(1, 10)') }} as changes (id, amount)
