-- Case compaction_incremental, the plain baseline: the same compaction as
-- bench_compaction_incremental, materialized by dbt-spark's own `table` (partitioned by `part` too),
-- without joinery_upsert's bookkeeping (staging, checks, journal, per-partition commit).
{{ config(materialized='table', partition_by=['part'], file_format='parquet') }}

{{ joinery.compact(
    snapshot=source('bench', 'ci_snapshot'),
    deltas=[source('bench', 'ci_delta')],
    key='id',
    updated_at='ts',
    loaded_at='loaded_at'
) }}
