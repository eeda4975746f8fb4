-- route_union: one port per alternative of the 30-alternative union column `payload`.
{{ config(materialized='table', file_format=var('input_format')) }}

{{ joinery.route_union(source('inputs', 'events'), 'payload') }}
