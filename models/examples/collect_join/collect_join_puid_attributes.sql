-- Seed document 001: M days of user attributes joined with N days of UID -> PUID mappings, both
-- windows ending on the run date; per PUID the distinct attribute ids of all its UIDs.
{{ config(materialized='table', file_format='parquet') }}

{% set run_date = var('collect_join_run_date', '2014-12-24') %}

{{ joinery.collect_join(
    build=ref('collect_join_attributes'),
    probe=ref('collect_join_mappings'),
    key='uid',
    values='attribute_ids',
    group='puid',
    build_where=joinery.trailing_days('time', var('collect_join_attribute_days', 7), run_date),
    probe_where=joinery.trailing_days('time', var('collect_join_mapping_days', 30), run_date)
) }}
