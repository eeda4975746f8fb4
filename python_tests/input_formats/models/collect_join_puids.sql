-- collect_join: the attribute ids of every puid, through the uid mappings.
{{ config(materialized='table', file_format='parquet') }}

{{ joinery.collect_join(
    build=source('inputs', 'cj_attributes'),
    probe=source('inputs', 'cj_mappings'),
    key='uid',
    values='attribute_ids',
    group='puid',
) }}
