-- A misconfigured joinery_upsert model: python_tests/test_upsert.py checks its error message.
-- Built only with --vars '{upsert_error_cases: true}'.
{{ config(
    enabled=var('upsert_error_cases', false), materialized='joinery_upsert',
    file_format='parquet', unique_key='customer_id', deleted_column='is_deleted'
) }}

select
    1 as customer_id,
    'yes' as is_deleted
