-- Case fk_join_feed (change feeds): orders joined to their customer (inner) straight from the two
-- Delta tables; each run reads their change data feeds since the versions its last commit recorded.
{{ config(materialized='joinery_upsert', unique_key='order_id') }}

{{ joinery.fk_join(
    left=source('bench', 'fkcf_orders'),
    right=source('bench', 'fkcf_customers'),
    left_key='order_id',
    foreign_key='customer_id',
    right_key='customer_id',
    join_type='inner',
    right_columns=['customer_name'],
    change_feed=true,
) }}
