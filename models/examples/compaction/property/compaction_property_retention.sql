-- Test model (python_tests/test_compaction.py, the tombstone case): the incremental compaction with a
-- tombstone retention of a day. Disabled unless the test sets the var compaction_property_tests.
{{ config(
    enabled=var('compaction_property_tests', false),
    materialized='joinery_upsert',
    unique_key='key',
    file_format=var('compaction_file_format')
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=source('compaction_property', 'compaction_property_snapshot'),
        deltas=[
            source('compaction_property', 'compaction_property_delta_1'),
            source('compaction_property', 'compaction_property_delta_2')
        ],
        key='key',
        updated_at='ts',
        deleted='is_deleted',
        loaded_at='loaded_at',
        tombstone_retention='1 day'
    ) }}
)

select * from compacted
