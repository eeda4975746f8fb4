-- A joinery_upsert table whose commits rewrite 30 partitions with 240-character partition values,
-- so its commit journal (joinery.pending) and list of superseded directories (joinery.garbage) are
-- longer than the metastore keeps in one table property: python_tests/test_upsert.py runs it.
-- Built only with --vars '{upsert_long_journal: <version>}'; every row carries that version.
{{ config(
    enabled=var('upsert_long_journal', false) != false, materialized='joinery_upsert',
    file_format='parquet', unique_key='id', partition_by=['part']
) }}

select
    id,
    {{ var('upsert_long_journal', 0) }} as version,
    concat(repeat('p', 237), lpad(cast(id % 30 as string), 3, '0')) as part
from range(90)
