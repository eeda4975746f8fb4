-- The output changelog of fk_orders_customers, as Kafka Streams would emit it: per run, an upsert
-- for every order whose joined value changed and one tombstone for every order whose result
-- disappeared. Appends; `_joinery_run` numbers the runs.
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    file_format='parquet',
) }}

{{ joinery.fk_join_changes(ref('fk_orders_customers'), key='order_id') }}
