-- A misconfigured joinery_upsert model: python_tests/test_upsert.py checks its error message.
-- Built only with --vars '{upsert_error_cases: true}'.
{{ config(
    enabled=var('upsert_error_cases', false), materialized='joinery_upsert',
    file_format='parquet', unique_key='customer_id', partition_by=['home city']
) }}

select
    1 as customer_id,
    'Paris' as `home city`  -- noqa: RF05
