-- Port `has_email` of splitter_contacts_routed: reads only that partition of the router.
{{ config(materialized='view') }}

{{ joinery.port(ref('splitter_contacts_routed'), 'has_email') }}
