-- Case fk_join (plain baseline: dbt-spark's own `table`, rebuilt from the whole history): orders joined to their customer (inner).
{{ config(materialized='table', file_format='parquet') }}

{{ joinery.fk_join(
    left=ref('bench_fkp_orders_state'),
    right=ref('bench_fkp_customers_state'),
    left_key='order_id',
    foreign_key='customer_id',
    right_key='customer_id',
    join_type='inner',
    left_columns=['customer_id', 'amount'],
    right_columns=['customer_name']
) }}
