-- Upkeep overlapping a run: python_tests/test_operations.py starts a run whose SELECT sleeps
-- JOINERY_OPS_SLEEP_MS in the JVM, runs joinery.maintain_all meanwhile, and checks what each did.
-- Each run upserts one row, id JOINERY_OPS_RUN. full_refresh=false: `--full-refresh` leaves the
-- table incremental (docs/operations.md). Built only with --vars '{operations_tests: true}'.
{{ config(
    enabled=var('operations_tests', false), materialized='joinery_upsert',
    file_format='delta', unique_key='id', full_refresh=false
) }}

select
    id,
    name
from (
    select
        {{ env_var('JOINERY_OPS_RUN', '1') }} as id,
        'run {{ env_var("JOINERY_OPS_RUN", "1") }}' as name,
        java_method(
            'java.lang.Thread', 'sleep', cast({{ env_var('JOINERY_OPS_SLEEP_MS', '0') }} as bigint)
        ) as slept
)
-- Thread.sleep returns nothing, which java_method yields as the string 'null'; the filter keeps
-- the column, so the sleep is not pruned away.
where slept = 'null'
