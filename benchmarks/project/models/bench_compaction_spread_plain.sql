-- Case compaction_incremental, spread variant, the plain baseline: bench_compaction_spread's
-- compaction as dbt-spark's own `table`.
{{ config(materialized='table', partition_by=['part']) }}

{{ bench_partitioned_compaction('ci_delta_spread') }}
