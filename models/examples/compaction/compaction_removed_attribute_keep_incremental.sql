-- Seed document 004, "Removed Attribute in Delta": value2 is kept, NULL for delta rows.
-- Incremental: each run merges only delta rows loaded after the table's newest loaded_at.
-- depends_on: {{ ref('compaction_removed_attribute_snapshot') }}
-- depends_on: {{ ref('compaction_removed_attribute_delta') }}
{{ config(
    materialized='joinery_upsert',
    unique_key='key',
    file_format=var('compaction_file_format')
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=source('compaction_landing', 'compaction_removed_attribute_snapshot'),
        deltas=[source('compaction_landing', 'compaction_removed_attribute_delta')],
        key='key',
        loaded_at='loaded_at',
        removed='keep'
    ) }}
)

select * from compacted
