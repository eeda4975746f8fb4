-- Cross join: every customer with every sales channel (no keys).
{{ config(materialized='table', file_format='parquet') }}

with

joined as (
    {{ joinery.multi_join(
        inputs={'customers': ref('hydrator_customers'), 'channels': ref('hydrator_channels')},
        join_type='cross',
    ) }}
)

select * from joined
