-- A misconfigured joinery_upsert model: python_tests/test_upsert.py checks its error message.
-- Built only with --vars '{upsert_error_cases: true}'.
{{ config(
    enabled=var('upsert_error_cases', false), materialized='joinery_upsert',
    file_format='hive', options={'fileFormat': 'avro'}, unique_key=['country', 'customer_id'],
    partition_by=['country']
) }}

select
    'NL' as country,
    1 as customer_id,
    'Ann' as name
