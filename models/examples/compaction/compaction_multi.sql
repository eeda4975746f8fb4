-- Seed document 004, "Multiple Deltas": delta k trumps delta k-1 for the same key.
{{ config(
    materialized='table',
    file_format='parquet'
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=ref('compaction_multi_snapshot'),
        deltas=[ref('compaction_multi_delta_1'), ref('compaction_multi_delta_2'), ref('compaction_multi_delta_3')],
        key='key',
        loaded_at='loaded_at'
    ) }}
)

select * from compacted
