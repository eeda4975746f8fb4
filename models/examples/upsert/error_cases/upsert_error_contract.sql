-- A joinery_upsert model that breaks its enforced contract (`amount` is a double, the contract
-- says decimal(10,2)): python_tests/test_upsert.py checks its error message.
-- Built only with --vars '{upsert_error_cases: true}'.
{{ config(
    enabled=var('upsert_error_cases', false), materialized='joinery_upsert',
    file_format='parquet', unique_key='customer_id', contract={'enforced': true}
) }}

select
    1 as customer_id,
    cast(1.5 as double) as amount
