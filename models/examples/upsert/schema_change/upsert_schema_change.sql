-- A joinery_upsert model whose SELECT changes shape between runs (phase JOINERY_SCHEMA_CHANGE_PHASE):
-- 1 the first shape; 2 a float written to the bigint column `n`, which an incremental run refuses;
-- 3 run with --full-refresh: `amount` widened to decimal(12,4), `seen` a timestamp instead of a
-- date, `note` removed; 4 a new column `extra`, refused under on_schema_change='fail'.
-- JOINERY_SCHEMA_CHANGE_FORMAT and JOINERY_SCHEMA_CHANGE_KEY change file_format and unique_key;
-- JOINERY_SCHEMA_CHANGE_MATERIALIZED switches the model to `table` and back;
-- JOINERY_SCHEMA_CHANGE_PARTITION_BY partitions it (by `n`); JOINERY_SCHEMA_CHANGE_HIVE_FORMAT is the
-- fileFormat option of a `hive` table.
-- python_tests/test_upsert.py checks that the full refresh replaces the table definition, and that
-- the table keeps its tblproperties and description (persist_docs) through it; that a changed
-- file_format, unique_key or Hive fileFormat stops an incremental run and is applied by a full
-- refresh; and that a full refresh that partitions the table, or unpartitions it, leaves no
-- superseded version behind.
-- Built only with --vars '{upsert_schema_change: true}'.
{{ config(
    enabled=var('upsert_schema_change', false),
    materialized=env_var('JOINERY_SCHEMA_CHANGE_MATERIALIZED', 'joinery_upsert'),
    file_format=env_var('JOINERY_SCHEMA_CHANGE_FORMAT', 'parquet'),
    unique_key=env_var('JOINERY_SCHEMA_CHANGE_KEY', 'id'),
    partition_by=env_var('JOINERY_SCHEMA_CHANGE_PARTITION_BY', '') or none,
    options={'fileFormat': env_var('JOINERY_SCHEMA_CHANGE_HIVE_FORMAT')}
    if env_var('JOINERY_SCHEMA_CHANGE_HIVE_FORMAT', '') else none,
    tblproperties={'owner_team': 'data'}, persist_docs={'relation': true},
    on_schema_change=env_var('JOINERY_SCHEMA_CHANGE_POLICY', 'ignore')
) }}

{% set phase = env_var('JOINERY_SCHEMA_CHANGE_PHASE', '1') %}

{% if phase == '1' %}
    select
        1 as id,
        cast(1.25 as decimal(10, 2)) as amount,
        cast('2024-01-01' as date) as seen,
        'x' as note,
        cast(10 as bigint) as n
{% elif phase == '2' %}
    select
        2 as id,
        cast(1.25 as decimal(10, 2)) as amount,
        cast('2024-01-02' as date) as seen,
        'y' as note,
        cast(1.75 as float) as n
{% elif phase == '3' %}
    select
        1 as id,
        cast(2.7512 as decimal(12, 4)) as amount,
        cast('2024-05-05 23:59:59' as timestamp) as seen,
        cast(7 as bigint) as n
{% else %}
    select
        3 as id,
        cast(1 as decimal(12, 4)) as amount,
        cast('2024-05-06 00:00:00' as timestamp) as seen,
        cast(8 as bigint) as n,
        'new' as extra
{% endif %}
