-- A misconfigured joinery_upsert model: python_tests/test_upsert.py checks its error message, and
-- that its first build leaves no version directory behind.
-- Built only with --vars '{upsert_error_cases: true}'.
{{ config(
    enabled=var('upsert_error_cases', false), materialized='joinery_upsert',
    file_format='parquet', unique_key='customer_id', tombstones=['seen']
) }}

select
    1 as customer_id,
    'Ann' as name
