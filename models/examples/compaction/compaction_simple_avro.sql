-- Seed document 004 asks for the compacted snapshot in Avro, so Pig and MapReduce jobs downstream can
-- read it: the simple example as a Hive SerDe table storing Avro container files.
-- depends_on: {{ ref('compaction_simple_snapshot') }}
-- depends_on: {{ ref('compaction_simple_delta') }}
{{ config(
    materialized='joinery_upsert',
    unique_key='key',
    file_format='hive',
    options={'fileFormat': 'avro'}
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
