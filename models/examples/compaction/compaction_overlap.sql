-- Seed document 004, "Overlap of Pulling Snapshot and Delta": a delta row older than the snapshot's row loses.
{{ config(
    materialized='table',
    file_format='parquet'
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=ref('compaction_overlap_snapshot'),
        deltas=[ref('compaction_overlap_delta')],
        key='key',
        loaded_at='loaded_at',
        updated_at='ts'
    ) }}
)

select * from compacted
