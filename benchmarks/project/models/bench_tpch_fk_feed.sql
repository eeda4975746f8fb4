-- Case tpch_fk_feed: each order with its customer (inner), straight from the two Delta tables; each
-- run reads their change data feeds since the versions its last commit recorded.
{{ config(materialized='joinery_upsert', unique_key='o_orderkey') }}

{{ joinery.fk_join(
    left=source('bench', 'tpch_orders'),
    right=source('bench', 'tpch_customer'),
    left_key='o_orderkey',
    foreign_key='o_custkey',
    right_key='c_custkey',
    join_type='inner',
    right_columns=['c_name', 'c_mktsegment', 'c_nationkey'],
    change_feed=true,
) }}
