-- Case fk_join (plain baseline: dbt-spark's own `table`, rebuilt from the whole history): the customers KTable.
{{ config(materialized='table') }}

{{ bench_changelog_state('fk_customers_log', key='customer_id') }}
