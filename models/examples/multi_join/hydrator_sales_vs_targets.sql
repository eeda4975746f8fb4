-- NULL-equal keys: sales joined to targets on (cust_id, store), where a NULL store means online.
-- With null_keys='equal' an online sale matches its customer's online target (NULL = NULL); with
-- the default ('distinct', SQL's rule) no online sale would find a target. Sales are required.
-- The post-hook's match counts compare keys the same way.
{{ config(
    materialized='table',
    file_format='parquet',
    post_hook="{{ joinery.record_metrics() }}",
) }}

with

joined as (
    {{ joinery.multi_join(
        inputs={'sales': ref('hydrator_store_sales'), 'targets': ref('hydrator_sales_targets')},
        keys={'sales': ['cust_id', 'store'], 'targets': ['cust_id', 'store']},
        join_type='left',
        null_keys='equal',
    ) }}
)

select * from joined
