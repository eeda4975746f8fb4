-- Equal ts: the later source wins (delta 2 over delta 1 over the snapshot).
-- Incremental: each run merges only delta rows loaded after the table's newest loaded_at.
-- depends_on: {{ ref('compaction_equal_ts_snapshot') }}
-- depends_on: {{ ref('compaction_equal_ts_delta_1') }}
-- depends_on: {{ ref('compaction_equal_ts_delta_2') }}
{{ config(
    materialized='joinery_upsert',
    unique_key='key',
    file_format=var('compaction_file_format')
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=source('compaction_landing', 'compaction_equal_ts_snapshot'),
        deltas=[source('compaction_landing', 'compaction_equal_ts_delta_1'), source('compaction_landing', 'compaction_equal_ts_delta_2')],
        key='key',
        loaded_at='loaded_at',
        updated_at='ts'
    ) }}
)

select * from compacted
