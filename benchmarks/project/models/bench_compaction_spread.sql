-- Case compaction_incremental, spread variant: the same compaction as bench_compaction_incremental,
-- but each delta batch's rows fall in every partition (the worst case for a partitioned MERGE).
{{ config(
    materialized='joinery_upsert',
    unique_key=['id', 'part'],
    partition_by=['part']
) }}

{{ bench_partitioned_compaction('ci_delta_spread') }}
