-- joinery.changelog_state from outside the package: the customers KTable; a late, older event
-- does not bring deleted customer 2 back.
{{ joinery.changelog_state(
    ref('it_customer_changelog'),
    key='customer_id',
    sequence_by='seq',
    deleted="op = 'd'",
    loaded_at='batch_id',
) }}
