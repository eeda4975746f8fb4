-- The output changelog of feed_orders_customers, as Kafka Streams would emit it.
{{ config(materialized='incremental', incremental_strategy='append', file_format='parquet') }}

{{ joinery.fk_join_changes(ref('feed_orders_customers'), key='order_id') }}
