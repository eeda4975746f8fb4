-- Seed document 004, "New Attribute in Delta" with a NULL default: snapshot rows get value2 NULL.
-- Incremental: each run merges only delta rows loaded after the table's newest loaded_at.
-- depends_on: {{ ref('compaction_new_attribute_snapshot') }}
-- depends_on: {{ ref('compaction_new_attribute_delta') }}
{{ config(
    materialized='joinery_upsert',
    unique_key='key',
    file_format=var('compaction_file_format')
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=source('compaction_landing', 'compaction_new_attribute_snapshot'),
        deltas=[source('compaction_landing', 'compaction_new_attribute_delta')],
        key='key',
        loaded_at='loaded_at'
    ) }}
)

select * from compacted
