-- A misconfigured joinery_upsert model: python_tests/test_upsert.py checks its error message.
-- Built only with --vars '{upsert_error_cases: true}'.
{{ config(
    enabled=var('upsert_error_cases', false), materialized='joinery_upsert',
    file_format='parquet', unique_key='customer_id', clustered_by=['customer_id'], buckets=4
) }}

select
    1 as customer_id,
    'Ann' as name
