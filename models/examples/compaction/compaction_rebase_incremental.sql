-- A new full snapshot: delta rows loaded before it are superseded, so keys missing from it are gone.
-- Incremental: each run merges only delta rows loaded after the table's newest loaded_at.
-- depends_on: {{ ref('compaction_rebase_snapshot') }}
-- depends_on: {{ ref('compaction_rebase_delta') }}
{{ config(
    materialized='joinery_upsert',
    unique_key='key',
    file_format=var('compaction_file_format')
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=source('compaction_landing', 'compaction_rebase_snapshot'),
        deltas=[source('compaction_landing', 'compaction_rebase_delta')],
        key='key',
        loaded_at='loaded_at'
    ) }}
)

select * from compacted
