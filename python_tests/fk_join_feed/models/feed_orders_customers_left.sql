-- Orders joined to their customer (left): every order, customer columns NULL when none matches.
{{ config(materialized='joinery_upsert', unique_key='order_id', file_format='delta') }}

{{ feed_orders_join('left') }}
