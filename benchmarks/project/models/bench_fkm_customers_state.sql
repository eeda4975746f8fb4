-- Case fk_join (dbt-spark's own `incremental` model with its `merge` strategy, the same SELECT (its merge has no delete clause: deleted rows stay, flagged)): the customers state.
{{ config(materialized='incremental', incremental_strategy='merge', unique_key='customer_id',
    tblproperties=bench_merge_properties()) }}

{{ bench_changelog_state('fk_customers_log', key='customer_id') }}
