-- Case compaction_incremental, dbt-spark's own `incremental` model with its `merge` strategy over the
-- same compaction as bench_compaction_incremental: compact selects its full compaction under dbt's
-- `incremental` (it reads a previous table only under joinery_upsert), so each run merges every row.
{{ config(materialized='incremental', incremental_strategy='merge', unique_key=['id', 'part'],
    partition_by=['part'], tblproperties=bench_merge_properties()) }}

{{ bench_partitioned_compaction() }}
