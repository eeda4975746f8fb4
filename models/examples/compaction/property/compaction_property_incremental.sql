-- Property-test model (python_tests/test_compaction_property.py): the incremental compaction of generated
-- histories. Disabled unless the test sets the var compaction_property_tests. The cost rule is off:
-- the test asserts the path each run takes, and a rebuild chosen from run times would replace it.
{{ config(
    enabled=var('compaction_property_tests', false),
    materialized='joinery_upsert',
    unique_key='key',
    file_format=var('compaction_file_format'),
    rebuild_threshold='always_incremental'
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
        loaded_at='loaded_at'
    ) }}
)

select * from compacted
