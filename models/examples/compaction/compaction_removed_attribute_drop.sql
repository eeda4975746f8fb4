-- Seed document 004, "Removed Attribute in Delta": value2 is projected out (removed='drop').
{{ config(
    materialized='table',
    file_format='parquet'
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=ref('compaction_removed_attribute_snapshot'),
        deltas=[ref('compaction_removed_attribute_delta')],
        key='key',
        loaded_at='loaded_at',
        removed='drop'
    ) }}
)

select * from compacted
