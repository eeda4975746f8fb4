-- Seed document 004, "A Simple Example": the compacted snapshot of one snapshot and one delta.
-- Incremental: each run merges only delta rows loaded after the table's newest loaded_at.
-- depends_on: {{ ref('compaction_simple_snapshot') }}
-- depends_on: {{ ref('compaction_simple_delta') }}
{{ config(
    materialized='joinery_upsert',
    unique_key='key',
    file_format=var('compaction_file_format')
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=source('compaction_landing', 'compaction_simple_snapshot'),
        deltas=[source('compaction_landing', 'compaction_simple_delta')],
        key='key',
        loaded_at='loaded_at'
    ) }}
)

select * from compacted
