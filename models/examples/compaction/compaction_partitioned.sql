-- Seed document 004, "Partitioned Table": (year, month) are part of the identity; the same key in
-- two partitions is two rows.
{{ config(
    materialized='table',
    file_format='parquet',
    partition_by=['year', 'month']
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=ref('compaction_partitioned_snapshot'),
        deltas=[ref('compaction_partitioned_delta')],
        key='key',
        loaded_at='loaded_at'
    ) }}
)

select * from compacted
