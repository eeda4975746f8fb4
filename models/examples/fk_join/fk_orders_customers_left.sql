-- Orders joined to their customer (left): every live order, customer columns NULL when the
-- foreign key is NULL or points at no live customer.
{{ config(
    materialized=var('fk_join_result_materialization', 'joinery_upsert'),
    unique_key='order_id',
    file_format=var('fk_join_file_format'),
) }}

{{ joinery.fk_join(
    left=ref('fk_orders_state'),
    right=ref('fk_customers_state'),
    left_key='order_id',
    foreign_key='customer_id',
    right_key='customer_id',
    join_type='left',
    left_columns=['customer_id', 'amount'],
    right_columns=['customer_name'],
) }}
