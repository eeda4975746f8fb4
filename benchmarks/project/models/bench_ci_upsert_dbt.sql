-- Case compaction_incremental (delta): dbt-spark's own incremental model with its `merge` strategy,
-- fed the same changed rows as bench_ci_upsert_joinery: what a user writes without joinery.
{{ config(materialized='incremental', incremental_strategy='merge', unique_key=['id', 'part'],
    partition_by=['part'], tblproperties=bench_merge_properties()) }}

{{ bench_upsert_input('ci_snapshot', 'ci_changes', is_incremental()) }}
