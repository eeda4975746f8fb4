-- The same join as feed_orders_customers_left, rebuilt by every run of the property test
-- (--full-refresh): the full recompute its incremental runs must equal.
{{ config(materialized='joinery_upsert', unique_key='order_id', file_format='delta') }}

{{ feed_orders_join('left') }}
