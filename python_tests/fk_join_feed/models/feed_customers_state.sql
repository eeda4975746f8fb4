-- The customers KTable straight from the Delta table's change data feed: the newest version of every
-- customer, deletes kept as tombstones.
{{ config(materialized='joinery_upsert', unique_key='customer_id', file_format='delta') }}

{{ joinery.changelog_state(source('shop', 'customers'), change_feed=true) }}
