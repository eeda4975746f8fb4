-- The same contract on parquet, which cannot enforce its constraints: joinery_upsert refuses it
-- before writing anything (python_tests/test_constraints.py checks the message).
-- Built only with --vars '{upsert_constraints: true}'.
{{ config(
    enabled=var('upsert_constraints', false), materialized='joinery_upsert',
    file_format='parquet', unique_key='id', contract={'enforced': true}
) }}

select
    cast(id as int) as id,
    cast(amount as int) as amount
from values (1, 10) as changes (id, amount)
