-- The mappings bucketed by uid into as many buckets as collect_join_attributes_bucketed.
{{ config(materialized='table', file_format='parquet', clustered_by=['uid'], buckets=4) }}

select * from {{ ref('collect_join_mappings') }}
