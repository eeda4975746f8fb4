-- Case fk_join (full recompute: always run with --full-refresh): orders joined to their customer (inner).
{{ config(materialized='joinery_upsert', unique_key='order_id') }}

{{ bench_orders_with_customer('bench_fkf') }}
