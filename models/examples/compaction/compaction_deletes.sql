-- Delete markers: a delta row with is_deleted that wins removes its key; an older delete loses.
{{ config(
    materialized='table',
    file_format='parquet'
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=ref('compaction_deletes_snapshot'),
        deltas=[ref('compaction_deletes_delta')],
        key='key',
        loaded_at='loaded_at',
        updated_at='ts',
        deleted='is_deleted'
    ) }}
)

select * from compacted
