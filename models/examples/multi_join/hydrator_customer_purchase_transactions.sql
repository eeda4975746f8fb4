-- Seed document 000, use case 2, second join: CustomersPurchases joined to transactions on
-- purchase_id, in the document's column order (purchase_id first).
{{ config(materialized='table', file_format='parquet') }}

with

joined as (
    {{ joinery.multi_join(
        inputs={
            'customer_purchases': ref('hydrator_customer_purchases'),
            'transactions': ref('hydrator_purchase_transactions'),
        },
        keys={'customer_purchases': ['purchase_id'], 'transactions': ['purchase_id']},
        select=[
            'join_key.purchase_id',
            'customer_purchases.cust_id',
            'customer_purchases.cust_name',
            'customer_purchases.location',
            'customer_purchases.store',
            'transactions.transaction_date',
            'transactions.purchase_amount',
        ],
    ) }}
)

select * from joined
