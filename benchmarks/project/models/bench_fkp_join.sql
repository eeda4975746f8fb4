-- Case fk_join (plain baseline: dbt-spark's own `table`, rebuilt from the whole history): orders joined to their customer (inner).
{{ config(materialized='table') }}

{{ bench_orders_with_customer('bench_fkp') }}
