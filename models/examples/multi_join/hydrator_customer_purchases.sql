-- Seed document 000, use case 2, first join: customers and purchases inner joined on cust_id
-- (the document's CustomersPurchases).
{{ config(materialized='table', file_format='parquet') }}

with

joined as (
    {{ joinery.multi_join(
        inputs={'customers': ref('hydrator_customers'), 'purchases': ref('hydrator_purchases')},
        keys={'customers': ['cust_id'], 'purchases': ['cust_id']},
    ) }}
)

select * from joined
