-- Seed document 000, use case 1: customers, purchases and transactions inner joined on cust_id.
-- Output: the key once, then each input's other columns in input order.
{{ config(materialized='table', file_format='parquet') }}

with

joined as (
    {{ joinery.multi_join(
        inputs={
            'customers': ref('hydrator_customers'),
            'purchases': ref('hydrator_purchases'),
            'transactions': ref('hydrator_transactions'),
        },
        keys={'customers': ['cust_id'], 'purchases': ['cust_id'], 'transactions': ['cust_id']},
    ) }}
)

select * from joined
