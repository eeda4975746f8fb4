-- An all-mode router (as NiFi routes): a contact goes to every segment whose condition holds,
-- to `unroutable` as well when a condition is NULL for it, and to `other` when it is in no port.
{{ config(materialized='table', file_format='parquet') }}

{{ joinery.route(
    ref('splitter_contacts'),
    ports=[
        {'name': 'high_value', 'when': 'lifetime_value >= 1000'},
        {'name': 'academic', 'when': "email like '%.edu'"},
    ],
    default_port='other',
    error_port='unroutable',
    mode='all'
) }}
