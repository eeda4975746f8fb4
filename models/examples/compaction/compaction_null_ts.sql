-- NULL ts ranks lowest: any timestamp beats NULL; between NULLs the later source wins.
{{ config(
    materialized='table',
    file_format='parquet'
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=ref('compaction_null_ts_snapshot'),
        deltas=[ref('compaction_null_ts_delta')],
        key='key',
        loaded_at='loaded_at',
        updated_at='ts'
    ) }}
)

select * from compacted
