-- Number of purchases per customer of seed document 000: the smallest model over the
-- Hydrator seeds, kept as the harness's proof that seeds, models and tests run on Spark.
with

customers as (
    select * from {{ ref('hydrator_customers') }}
),

purchases as (
    select * from {{ ref('hydrator_purchases') }}
),

purchase_counts as (
    select
        cust_id,
        count(*) as n_purchases
    from purchases
    group by cust_id
)

select
    customers.cust_id,
    customers.cust_name,
    coalesce(purchase_counts.n_purchases, 0) as n_purchases
from customers
left join purchase_counts
    on customers.cust_id = purchase_counts.cust_id
