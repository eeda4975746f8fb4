-- The attributes bucketed by uid: with the mappings bucketed the same way (same key, same number
-- of buckets: the document's "same sharding"), the collect join needs no shuffle.
{{ config(materialized='table', file_format='parquet', clustered_by=['uid'], buckets=4) }}

select * from {{ ref('collect_join_attributes') }}
