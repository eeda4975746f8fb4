-- joinery_upsert on delta: python_tests/test_upsert.py runs it where no Delta jars exist and checks
-- the MERGE statement it issued. Built only with --vars '{upsert_error_cases: true}'.
{{ config(enabled=var('upsert_error_cases', false), materialized='joinery_upsert', file_format='delta',
    unique_key=['country', 'customer_id'], deleted_column='is_deleted') }}

select
    'NL' as country,
    1 as customer_id,
    'Ann' as name,
    false as is_deleted
