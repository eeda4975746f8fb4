-- A new full snapshot: delta rows loaded before it are superseded, so keys missing from it are gone.
{{ config(
    materialized='table',
    file_format='parquet'
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=ref('compaction_rebase_snapshot'),
        deltas=[ref('compaction_rebase_delta')],
        key='key',
        loaded_at='loaded_at'
    ) }}
)

select * from compacted
