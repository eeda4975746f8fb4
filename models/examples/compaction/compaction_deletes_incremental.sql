-- Delete markers: a delta row with is_deleted that wins removes its key; an older delete loses.
-- Incremental: each run merges only delta rows loaded after the table's newest loaded_at.
-- depends_on: {{ ref('compaction_deletes_snapshot') }}
-- depends_on: {{ ref('compaction_deletes_delta') }}
{{ config(
    materialized='joinery_upsert',
    unique_key='key',
    file_format=var('compaction_file_format')
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=source('compaction_landing', 'compaction_deletes_snapshot'),
        deltas=[source('compaction_landing', 'compaction_deletes_delta')],
        key='key',
        loaded_at='loaded_at',
        updated_at='ts',
        deleted='is_deleted'
    ) }}
)

select * from compacted
