-- changelog_state of the customers changelog, stored in the input format: fk_join's right input.
{{ config(materialized='joinery_upsert', unique_key='customer_id', file_format=var('input_format')) }}

{{ joinery.changelog_state(
    source('inputs', 'customers_changelog'),
    key='customer_id',
    sequence_by='seq',
    deleted="op = 'd'",
    loaded_at='batch_id',
    operation='op',
    operation_values=['c', 'u', 'd'],
) }}
