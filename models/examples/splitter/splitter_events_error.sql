-- Port `error` of splitter_events_by_type: reads only that partition of the router.
{{ config(materialized='view') }}

{{ joinery.port(ref('splitter_events_by_type'), 'error') }}
