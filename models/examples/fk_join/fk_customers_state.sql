-- The customers KTable: the newest version of every customer, deletes kept as tombstones.
-- depends_on: {{ ref('fk_customers_changelog') }}
{{ config(
    materialized=var('fk_join_state_materialization', 'joinery_upsert'),
    unique_key='customer_id',
    file_format=var('fk_join_file_format'),
) }}

{{ joinery.changelog_state(
    source('fk_join', 'customers_changelog'),
    key='customer_id',
    sequence_by='seq',
    deleted="op = 'd'",
    loaded_at='batch_id',
    operation='op',
    operation_values=['c', 'u', 'd'],
) }}
