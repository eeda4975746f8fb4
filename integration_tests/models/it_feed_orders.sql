-- A Delta table with its change data feed on, created from the orders seed: its version 0 holds
-- every order as an insert.
{{ config(materialized='table', file_format='delta', tblproperties={'delta.enableChangeDataFeed': 'true'}) }}

select
    order_id,
    customer_id,
    amount
from {{ ref('it_orders') }}
