-- The router: one port per record type of the union column `payload`, plus the error port for
-- events whose union holds no record or several. Materialized once, partitioned by joinery_port.
{{ config(materialized='table', file_format='parquet') }}

{{ joinery.route_union(ref('splitter_events'), 'payload') }}
