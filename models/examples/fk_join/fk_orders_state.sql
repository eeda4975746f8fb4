-- The orders KTable: the newest version of every order, deletes kept as tombstones. Each run
-- merges only the batches that arrived since the previous run (batch_id above the watermark).
-- depends_on: {{ ref('fk_orders_changelog') }}
{{ config(
    materialized=var('fk_join_state_materialization', 'joinery_upsert'),
    unique_key='order_id',
    file_format=var('fk_join_file_format'),
) }}

{{ joinery.changelog_state(
    source('fk_join', 'orders_changelog'),
    key='order_id',
    sequence_by='seq',
    deleted="op = 'd'",
    loaded_at='batch_id',
    operation='op',
    operation_values=['c', 'u', 'd'],
) }}
