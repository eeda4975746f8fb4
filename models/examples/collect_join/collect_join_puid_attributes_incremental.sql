-- Seed document 001 done incrementally ("it can be done incrementally"): each run reads the
-- attribute and mapping rows that arrived since the last run (TIME above the watermarks stored in
-- the table), recomputes only the PUIDs they touch (PUIDs of new mappings, and PUIDs mapped to
-- UIDs with new attributes) from all history, and upserts them. Untouched PUIDs are not rewritten.
-- Sources are append-only; applying a batch twice yields the same rows.
{{ config(materialized='joinery_upsert', unique_key='puid', file_format=var('collect_join_file_format')) }}

with

attributes as (
    select * from {{ ref('collect_join_attributes') }}
),

mappings as (
    select * from {{ ref('collect_join_mappings') }}
),

-- New rows: TIME above the watermark stored in the table (joinery.new_rows_filter); on the first
-- run (or --full-refresh) every row is new and every PUID affected.
new_attributes as (
    select attributes.uid
    from attributes
    where {{ joinery.new_rows_filter('attributes.time', 'attributes_loaded_through') }}
),

new_mappings as (
    select mappings.puid
    from mappings
    where {{ joinery.new_rows_filter('mappings.time', 'mappings_loaded_through') }}
),

-- Used in probe_where, inside the collect_join call.
affected_puids as (  -- noqa: ST03
    select new_mappings.puid from new_mappings
    union
    select mappings.puid
    from mappings
    left semi join new_attributes
        on mappings.uid = new_attributes.uid
),

loaded as (
    select
        (select max(attributes.time) from attributes) as attributes_loaded_through,
        (select max(mappings.time) from mappings) as mappings_loaded_through
),

collected as (
    {{ joinery.collect_join(
        build=ref('collect_join_attributes'),
        probe=ref('collect_join_mappings'),
        key='uid',
        values='attribute_ids',
        group='puid',
        probe_where='puid in (select affected_puids.puid from affected_puids)'
    ) }}
)

select
    collected.puid,
    collected.attribute_ids,
    loaded.attributes_loaded_through,
    loaded.mappings_loaded_through
from collected
cross join loaded
