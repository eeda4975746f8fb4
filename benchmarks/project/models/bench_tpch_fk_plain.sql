-- Case tpch_fk_feed, the plain baseline: dbt-spark's own `table` of the same join, rebuilt from the
-- current tables on every run.
{{ config(materialized='table') }}

select
    orders.*,
    customers.c_name,
    customers.c_mktsegment,
    customers.c_nationkey
from {{ source('bench', 'tpch_orders') }} as orders
inner join {{ source('bench', 'tpch_customer') }} as customers
    on orders.o_custkey = customers.c_custkey
