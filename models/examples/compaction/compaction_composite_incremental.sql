-- Composite key (key1, key2), where the document's NOT IN recipe does not work.
-- Incremental: each run merges only delta rows loaded after the table's newest loaded_at.
-- depends_on: {{ ref('compaction_composite_snapshot') }}
-- depends_on: {{ ref('compaction_composite_delta') }}
{{ config(
    materialized='joinery_upsert',
    unique_key=['key1', 'key2'],
    file_format=var('compaction_file_format')
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=source('compaction_landing', 'compaction_composite_snapshot'),
        deltas=[source('compaction_landing', 'compaction_composite_delta')],
        key=['key1', 'key2'],
        loaded_at='loaded_at'
    ) }}
)

select * from compacted
