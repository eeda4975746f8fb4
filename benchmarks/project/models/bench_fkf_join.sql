-- Case fk_join (full recompute: always run with --full-refresh): orders joined to their customer (inner).
{{ config(materialized='joinery_upsert', unique_key='order_id', file_format='parquet') }}

{{ joinery.fk_join(
    left=ref('bench_fkf_orders_state'),
    right=ref('bench_fkf_customers_state'),
    left_key='order_id',
    foreign_key='customer_id',
    right_key='customer_id',
    join_type='inner',
    left_columns=['customer_id', 'amount'],
    right_columns=['customer_name']
) }}
