-- Case fk_join (incremental: each run merges only the new batches): the orders KTable.
{{ config(materialized='joinery_upsert', unique_key='order_id') }}

{{ bench_changelog_state('fk_orders_log', key='order_id') }}
