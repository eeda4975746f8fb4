-- Two overlapping invocations of one joinery_upsert model: python_tests/test_upsert.py starts a slow
-- run (its SELECT sleeps JOINERY_OVERLAP_SLEEP_MS in the JVM before yielding its row), lets a fast
-- run commit meanwhile, and expects the slow one to commit nothing. Each run upserts one customer,
-- id JOINERY_OVERLAP_RUN. Built only with --vars '{upsert_overlap: true}'.
{{ config(
    enabled=var('upsert_overlap', false), materialized='joinery_upsert',
    file_format='parquet', unique_key='customer_id'
) }}

select
    customer_id,
    name
from (
    select
        {{ env_var('JOINERY_OVERLAP_RUN', '1') }} as customer_id,
        'Run' as name,
        java_method(
            'java.lang.Thread', 'sleep', cast({{ env_var('JOINERY_OVERLAP_SLEEP_MS', '0') }} as bigint)
        ) as slept
)
-- Thread.sleep returns nothing, which java_method yields as the string 'null'; the filter keeps
-- the column, so the sleep is not pruned away.
where slept = 'null'
