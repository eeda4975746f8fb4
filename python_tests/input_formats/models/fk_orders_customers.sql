-- fk_join of the two states (inner), with the customer's struct `profile`.
{{ config(materialized='table', file_format='parquet') }}

{{ joinery.fk_join(
    left=ref('changelog_orders_state'),
    right=ref('changelog_customers_state'),
    left_key='order_id',
    foreign_key='customer_id',
    right_key='customer_id',
    join_type='inner',
    left_columns=['customer_id', 'amount'],
    right_columns=['customer_name', 'profile'],
) }}
