-- Case fk_join (incremental: each run merges only the new batches): orders joined to their customer (inner).
{{ config(materialized='joinery_upsert', unique_key='order_id') }}

{{ bench_orders_with_customer('bench_fk') }}
