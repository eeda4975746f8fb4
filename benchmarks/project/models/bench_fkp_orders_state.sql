-- Case fk_join (plain baseline: dbt-spark's own `table`, rebuilt from the whole history): the orders KTable.
{{ config(materialized='table') }}

{{ bench_changelog_state('fk_orders_log', key='order_id') }}
