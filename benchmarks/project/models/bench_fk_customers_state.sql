-- Case fk_join (incremental: each run merges only the new batches): the customers KTable.
{{ config(materialized='joinery_upsert', unique_key='customer_id') }}

{{ bench_changelog_state('fk_customers_log', key='customer_id') }}
