-- Case fk_join (delta): joinery_upsert's MERGE fed the same changed rows of the join result as
-- bench_fk_upsert_dbt (each batch's upserted orders with their customer, no deletes). Its full-build
-- SQL is the base table, not the state the changes lead to, so it never rebuilds (rebuild_threshold).
{{ config(materialized='joinery_upsert', rebuild_threshold='always_incremental', unique_key='order_id') }}

{{ bench_upsert_input('fk_upsert_base', 'fk_changes', joinery.is_incremental()) }}
