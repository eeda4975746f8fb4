-- changelog_state of the orders changelog, stored in the input format: fk_join's left input.
{{ config(materialized='joinery_upsert', unique_key='order_id', file_format=var('input_format')) }}

{{ joinery.changelog_state(
    source('inputs', 'orders_changelog'),
    key='order_id',
    sequence_by='seq',
    deleted="op = 'd'",
    loaded_at='batch_id',
    operation='op',
    operation_values=['c', 'u', 'd'],
) }}
