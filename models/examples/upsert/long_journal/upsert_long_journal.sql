-- A joinery_upsert table whose commits rewrite 30 partitions with 240-character partition values,
-- so its commit journal (joinery.pending) and list of superseded directories (joinery.garbage) are
-- longer than the metastore keeps in one table property: python_tests/test_upsert.py runs it.
-- The 30 partitions are 15 `part` folders of two `shelf` partitions each, two folders below their
-- version folder, so the test also checks that the clean-up removes emptied folders at every level
-- (one of each pair deleted in bulk, the other dropped as a partition: see _upsert_delete_directories).
-- Built only with --vars '{upsert_long_journal: true}'. Every row carries the version in the env var
-- JOINERY_LONG_JOURNAL_VERSION (an env var, not a var: a new --vars value makes dbt parse the whole
-- project again, a changed env var only the files that read it).
{{ config(
    enabled=var('upsert_long_journal', false), materialized='joinery_upsert',
    file_format='parquet', unique_key='id', partition_by=['part', 'shelf']
) }}

select
    id,
    {{ env_var('JOINERY_LONG_JOURNAL_VERSION', '1') | int }} as version,
    concat(repeat('p', 237), lpad(cast(id % 15 as string), 3, '0')) as part,
    cast(id % 2 as string) as shelf
from range(90)
