-- Test-only (python_tests/test_iceberg.py): a file_format that does not fit the catalog, a compile error.
{{ config(
    materialized='joinery_upsert',
    unique_key='id',
    file_format='iceberg',
    schema='spark_catalog.examples',
    enabled=var('iceberg_test_models', false)
) }}

select 1 as id
