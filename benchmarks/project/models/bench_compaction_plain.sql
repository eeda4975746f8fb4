-- Case compaction_incremental, the plain baseline: the same compaction as
-- bench_compaction_incremental, materialized by dbt-spark's own `table` (partitioned by `part` too),
-- without joinery_upsert's bookkeeping (staging, checks, journal, per-partition commit).
{{ config(materialized='table', partition_by=['part']) }}

{{ bench_partitioned_compaction() }}
