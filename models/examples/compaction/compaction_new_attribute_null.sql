-- Seed document 004, "New Attribute in Delta" with a NULL default: snapshot rows get value2 NULL.
{{ config(
    materialized='table',
    file_format='parquet'
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=ref('compaction_new_attribute_snapshot'),
        deltas=[ref('compaction_new_attribute_delta')],
        key='key',
        loaded_at='loaded_at'
    ) }}
)

select * from compacted
