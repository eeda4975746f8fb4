-- Orders joined to their customer (inner): an order without a live customer has no row. Each run
-- recomputes only the orders touched by new state changes of either side and applies the
-- differences (upserts and deletes) with joinery_upsert.
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
    join_type='inner',
    left_columns=['customer_id', 'amount'],
    right_columns=['customer_name'],
) }}
