-- route: the events by id range; the router is stored in the input format, so port() reads it.
{{ config(materialized='table', file_format=var('input_format')) }}

{{ joinery.route(
    source('inputs', 'events'),
    ports=[{'name': 'low', 'when': 'event_id <= 10'}, {'name': 'mid', 'when': 'event_id <= 20'}],
    default_port='high',
) }}
