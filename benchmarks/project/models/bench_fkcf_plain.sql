-- Case fk_join_feed (plain baseline: dbt-spark's own `table`, rebuilt from the current tables): what a
-- user would write for the same join.
{{ config(materialized='table') }}

select
    orders.*,
    customers.customer_name
from {{ source('bench', 'fkcf_orders') }} as orders
inner join {{ source('bench', 'fkcf_customers') }} as customers
    on orders.customer_id = customers.customer_id
