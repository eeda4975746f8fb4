-- Case fk_join (incremental: each run merges only the new batches): the orders KTable.
{{ config(materialized='joinery_upsert', unique_key='order_id', file_format='parquet') }}

{{ joinery.changelog_state(
    source('bench', 'fk_orders_log'),
    key='order_id',
    sequence_by='seq',
    deleted="op = 'd'",
    loaded_at='batch_id'
) }}
