-- joinery.changelog_state from outside the package: the orders KTable (order 12 deleted).
{{ joinery.changelog_state(
    ref('it_order_changelog'),
    key='order_id',
    sequence_by='seq',
    deleted="op = 'd'",
    loaded_at='batch_id',
) }}
