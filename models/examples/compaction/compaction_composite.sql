-- Composite key (key1, key2), where the document's NOT IN recipe does not work.
{{ config(
    materialized='table',
    file_format='parquet'
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=ref('compaction_composite_snapshot'),
        deltas=[ref('compaction_composite_delta')],
        key=['key1', 'key2'],
        loaded_at='loaded_at'
    ) }}
)

select * from compacted
