-- Equal ts: the later source wins (delta 2 over delta 1 over the snapshot).
{{ config(
    materialized='table',
    file_format='parquet'
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=ref('compaction_equal_ts_snapshot'),
        deltas=[ref('compaction_equal_ts_delta_1'), ref('compaction_equal_ts_delta_2')],
        key='key',
        loaded_at='loaded_at',
        updated_at='ts'
    ) }}
)

select * from compacted
