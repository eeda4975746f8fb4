-- Case fk_join (delta): dbt-spark's own incremental model with its `merge` strategy, fed the same
-- changed rows as bench_fk_upsert_joinery: what a user writes without joinery.
{{ config(materialized='incremental', incremental_strategy='merge', unique_key='order_id', tblproperties=bench_merge_properties()) }}

{{ bench_upsert_input('fk_upsert_base', 'fk_changes', is_incremental()) }}
