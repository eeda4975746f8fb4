-- Case fk_join (full recompute: always run with --full-refresh): the customers KTable.
{{ config(materialized='joinery_upsert', unique_key='customer_id') }}

{{ bench_changelog_state('fk_customers_log', key='customer_id') }}
