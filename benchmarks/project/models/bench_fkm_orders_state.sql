-- Case fk_join (dbt-spark's own `incremental` model with its `merge` strategy, the same SELECT (its merge has no delete clause: deleted rows stay, flagged)): the orders state.
{{ config(materialized='incremental', incremental_strategy='merge', unique_key='order_id',
    tblproperties=bench_merge_properties()) }}

{{ bench_changelog_state('fk_orders_log', key='order_id') }}
