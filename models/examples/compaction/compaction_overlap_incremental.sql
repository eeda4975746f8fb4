-- Seed document 004, "Overlap of Pulling Snapshot and Delta": a delta row older than the snapshot's row loses.
-- Incremental: each run merges only delta rows loaded after the table's newest loaded_at.
-- depends_on: {{ ref('compaction_overlap_snapshot') }}
-- depends_on: {{ ref('compaction_overlap_delta') }}
{{ config(
    materialized='joinery_upsert',
    unique_key='key',
    file_format=var('compaction_file_format')
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=source('compaction_landing', 'compaction_overlap_snapshot'),
        deltas=[source('compaction_landing', 'compaction_overlap_delta')],
        key='key',
        loaded_at='loaded_at',
        updated_at='ts'
    ) }}
)

select * from compacted
