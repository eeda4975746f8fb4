-- Seed document 004, "A Simple Example": the compacted snapshot of one snapshot and one delta.
{{ config(
    materialized='table',
    file_format='parquet'
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=ref('compaction_simple_snapshot'),
        deltas=[ref('compaction_simple_delta')],
        key='key',
        loaded_at='loaded_at'
    ) }}
)

select * from compacted
