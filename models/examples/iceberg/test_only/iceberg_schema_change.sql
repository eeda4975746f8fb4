-- Test-only (python_tests/test_iceberg.py): step 1 builds four rows; step 2 (env
-- JOINERY_ICEBERG_STEP=2) updates id 2, deletes id 3, inserts id 5 and adds the column `note`. The
-- struct's field name needs quoting, so joinery reads its type back as JSON.
{{ config(
    materialized='joinery_upsert',
    enabled=var('iceberg_test_models', false),
    schema='iceberg.examples',
    file_format='iceberg',
    unique_key=['part', 'id'],
    deleted_column='deleted',
    partition_by=['part']
) }}

{% set step = env_var('JOINERY_ICEBERG_STEP', '1') | int %}

with

changes as (

    {% if step == 1 %}
        select
            id,
            id % 2 as part,
            concat('v', id) as value,
            named_struct('page-view', id) as hits,
            false as deleted
        from range(1, 5)
    {% else %}
        select
            id,
            id % 2 as part,
            concat('w', id) as value,
            named_struct('page-view', id * 10) as hits,
            id = 3 as deleted,
            concat('note ', id) as note
        from range(2, 6)
        where id != 4
    {% endif %}

)

select * from changes
