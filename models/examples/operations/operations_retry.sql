-- `dbt retry` after a failed joinery_upsert run (python_tests/test_operations.py): with
-- JOINERY_OPS_FAIL=1 the SELECT fails in Spark while the run executes it; fixed, `dbt retry` runs
-- it and the model after it. Built only with --vars '{operations_tests: true}'.
{{ config(
    enabled=var('operations_tests', false), materialized='joinery_upsert',
    file_format='delta', unique_key='id'
) }}

select
    id,
    if({{ env_var('JOINERY_OPS_FAIL', '0') }} = 1, raise_error('failing on purpose'), name) as name
from values (1, 'one'), (2, 'two') as changes (id, name)
