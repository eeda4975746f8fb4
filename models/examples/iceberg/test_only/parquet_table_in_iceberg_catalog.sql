-- Test-only (python_tests/test_iceberg.py): a file_format that does not fit the catalog, a compile error.
{{ config(
    materialized='table',
    file_format='parquet',
    schema='iceberg.examples',
    enabled=var('iceberg_test_models', false)
) }}

select 1 as id
