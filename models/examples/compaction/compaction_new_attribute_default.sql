-- Seed document 004, "New Attribute in Delta": value2 is padded with its default 'default' for snapshot rows.
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
        loaded_at='loaded_at',
        defaults={'value2': "'default'"}
    ) }}
)

select * from compacted
