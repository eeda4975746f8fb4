-- Case fk_join (full recompute: always run with --full-refresh): orders joined to their customer (inner).
{{ config(materialized='joinery_upsert', unique_key='order_id', file_format='parquet') }}

{{ bench_orders_with_customer('bench_fkf') }}
