-- Seed document 004, "Duplicate Keys in Delta": the version with the latest ts wins.
{{ config(
    materialized='table',
    file_format='parquet'
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=ref('compaction_duplicates_snapshot'),
        deltas=[ref('compaction_duplicates_delta')],
        key='key',
        loaded_at='loaded_at',
        updated_at='ts'
    ) }}
)

select * from compacted
