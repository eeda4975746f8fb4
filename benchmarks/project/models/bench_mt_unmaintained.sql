-- Case maintain: a delta joinery_upsert table fed the same changed rows as its twin; the case runs
-- joinery.maintain on bench_mt_maintained only, then times the next incremental runs of both.
{{ config(materialized='joinery_upsert', unique_key='id') }}

{{ bench_upsert_input('mt_base', 'mt_changes', joinery.is_incremental()) }}
