-- Case fk_join (full recompute: always run with --full-refresh): the orders KTable.
{{ config(materialized='joinery_upsert', unique_key='order_id') }}

{{ bench_changelog_state('fk_orders_log', key='order_id') }}
