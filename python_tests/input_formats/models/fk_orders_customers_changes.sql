-- fk_join_changes: the output changelog of fk_orders_customers (its first run: every row an upsert).
{{ config(materialized='incremental', incremental_strategy='append', file_format='parquet') }}

{{ joinery.fk_join_changes(ref('fk_orders_customers'), key='order_id') }}
