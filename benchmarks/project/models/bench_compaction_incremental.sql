-- Case compaction_incremental: a compacted snapshot partitioned by `part` (100 partitions); each
-- incremental run merges only delta rows loaded after the table's newest loaded_at.
{{ config(
    materialized='joinery_upsert',
    unique_key=['id', 'part'],
    partition_by=['part']
) }}

{{ bench_partitioned_compaction() }}
