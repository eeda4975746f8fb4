-- Case fk_join (incremental: each run merges only the new batches): the customers KTable.
{{ config(materialized='joinery_upsert', unique_key='customer_id', file_format='parquet') }}

{{ joinery.changelog_state(
    source('bench', 'fk_customers_log'),
    key='customer_id',
    sequence_by='seq',
    deleted="op = 'd'",
    loaded_at='batch_id'
) }}
