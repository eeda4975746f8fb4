-- Case fk_join (incremental: each run merges only the new batches): orders joined to their customer (inner).
{{ config(materialized='joinery_upsert', unique_key='order_id', file_format='parquet') }}

{{ joinery.fk_join(
    left=ref('bench_fk_orders_state'),
    right=ref('bench_fk_customers_state'),
    left_key='order_id',
    foreign_key='customer_id',
    right_key='customer_id',
    join_type='inner',
    left_columns=['customer_id', 'amount'],
    right_columns=['customer_name']
) }}
