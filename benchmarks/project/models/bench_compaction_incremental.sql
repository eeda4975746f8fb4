-- Case compaction_incremental: a compacted snapshot partitioned by `part` (100 partitions); each
-- incremental run merges only delta rows loaded after the table's newest loaded_at.
{{ config(
    materialized='joinery_upsert',
    unique_key=['id', 'part'],
    partition_by=['part'],
    file_format='parquet'
) }}

{{ joinery.compact(
    snapshot=source('bench', 'ci_snapshot'),
    deltas=[source('bench', 'ci_delta')],
    key='id',
    updated_at='ts',
    loaded_at='loaded_at'
) }}
