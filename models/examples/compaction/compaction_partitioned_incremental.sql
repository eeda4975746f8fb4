-- Seed document 004, "Partitioned Table": (year, month) are part of the identity; the same key in
-- two partitions is two rows.
-- Incremental: each run merges only delta rows loaded after the table's newest loaded_at.
-- depends_on: {{ ref('compaction_partitioned_snapshot') }}
-- depends_on: {{ ref('compaction_partitioned_delta') }}
{{ config(
    materialized='joinery_upsert',
    unique_key=['key', 'year', 'month'],
    file_format=var('compaction_file_format'),
    partition_by=['year', 'month']
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=source('compaction_landing', 'compaction_partitioned_snapshot'),
        deltas=[source('compaction_landing', 'compaction_partitioned_delta')],
        key='key',
        loaded_at='loaded_at'
    ) }}
)

select * from compacted
