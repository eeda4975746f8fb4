-- Composite-key join: purchases and store targets on (cust_id, store), the key columns equal
-- position by position. A target matching only one key part joins nothing.
{{ config(materialized='table', file_format='parquet') }}

with

joined as (
    {{ joinery.multi_join(
        inputs={'purchases': ref('hydrator_purchases'), 'targets': ref('hydrator_store_targets')},
        keys={'purchases': ['cust_id', 'store'], 'targets': ['cust_id', 'store']},
    ) }}
)

select * from joined
