-- The same collect join over inputs bucketed by uid: a merge join that reads both sides bucket by
-- bucket, with no shuffle of either side before the join.
{{ config(materialized='table', file_format='parquet') }}

{{ joinery.collect_join(
    build=ref('collect_join_attributes_bucketed'),
    probe=ref('collect_join_mappings_bucketed'),
    key='uid',
    values='attribute_ids',
    group='puid',
    strategy='merge'
) }}
