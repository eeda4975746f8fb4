-- Outer join with customers required (the Hydrator requiredInputs): every customer is kept, and
-- purchases and transactions are optional, so Cathie (no purchase) has NULL purchase columns.
-- The post-hook records rows in, rows out and each optional input's matched / unmatched rows.
{{ config(
    materialized='table',
    file_format='parquet',
    post_hook="{{ joinery.record_metrics() }}",
) }}

with

joined as (
    {{ joinery.multi_join(
        inputs={
            'customers': ref('hydrator_customers'),
            'purchases': ref('hydrator_purchases'),
            'transactions': ref('hydrator_transactions'),
        },
        keys={'customers': ['cust_id'], 'purchases': ['cust_id'], 'transactions': ['cust_id']},
        join_type='outer',
        required=['customers'],
    ) }}
)

select * from joined
