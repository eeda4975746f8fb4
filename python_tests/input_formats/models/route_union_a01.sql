{{ config(materialized='view') }}

{{ joinery.port(ref('route_union_events'), 'a01') }}
