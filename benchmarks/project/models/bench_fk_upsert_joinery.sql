-- Case fk_join (delta): joinery_upsert's MERGE fed the same changed rows of the join result as
-- bench_fk_upsert_dbt (each batch's upserted orders with their customer, no deletes).
{{ config(materialized='joinery_upsert', unique_key='order_id') }}

{{ bench_upsert_input('fk_upsert_base', 'fk_changes', joinery.is_incremental()) }}
