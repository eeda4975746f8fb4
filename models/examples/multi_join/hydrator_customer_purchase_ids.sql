-- Seed document 000, use case 3: the customers-purchases join, selecting cust_id, cust_name and
-- purchase_id only.
{{ config(materialized='table', file_format='parquet') }}

with

joined as (
    {{ joinery.multi_join(
        inputs={'customers': ref('hydrator_customers'), 'purchases': ref('hydrator_purchases')},
        keys={'customers': ['cust_id'], 'purchases': ['cust_id']},
        select=['join_key.cust_id', 'customers.cust_name', 'purchases.purchase_id'],
    ) }}
)

select * from joined
