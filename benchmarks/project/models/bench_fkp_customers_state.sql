-- Case fk_join (plain baseline: dbt-spark's own `table`, rebuilt from the whole history): the customers KTable.
{{ config(materialized='table', file_format='parquet') }}

{{ joinery.changelog_state(
    source('bench', 'fk_customers_log'),
    key='customer_id',
    sequence_by='seq',
    deleted="op = 'd'",
    loaded_at='batch_id'
) }}
