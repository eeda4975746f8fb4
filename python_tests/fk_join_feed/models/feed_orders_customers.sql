-- Orders joined to their customer (inner), straight from the two Delta tables: each run reads the
-- change feeds since the versions its last commit recorded and recomputes only the orders they touch.
{{ config(materialized='joinery_upsert', unique_key='order_id', file_format='delta') }}

{{ feed_orders_join('inner') }}
