{{ config(materialized='view') }}

{{ joinery.port(ref('route_events'), 'mid') }}
