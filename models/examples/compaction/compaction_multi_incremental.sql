-- Seed document 004, "Multiple Deltas": delta k trumps delta k-1 for the same key.
-- Incremental: each run merges only delta rows loaded after the table's newest loaded_at.
-- depends_on: {{ ref('compaction_multi_snapshot') }}
-- depends_on: {{ ref('compaction_multi_delta_1') }}
-- depends_on: {{ ref('compaction_multi_delta_2') }}
-- depends_on: {{ ref('compaction_multi_delta_3') }}
{{ config(
    materialized='joinery_upsert',
    unique_key='key',
    file_format=var('compaction_file_format')
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=source('compaction_landing', 'compaction_multi_snapshot'),
        deltas=[source('compaction_landing', 'compaction_multi_delta_1'), source('compaction_landing', 'compaction_multi_delta_2'), source('compaction_landing', 'compaction_multi_delta_3')],
        key='key',
        loaded_at='loaded_at'
    ) }}
)

select * from compacted
