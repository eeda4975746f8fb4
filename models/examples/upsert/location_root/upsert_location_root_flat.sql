-- A joinery_upsert table under a `location_root` spelled otherwise than the metastore stores it
-- (`/data/lake` or `file:///data/lake/`, stored `file:/data/lake`), as dbt-spark users write it:
-- python_tests/test_upsert.py builds it first as a plain `table` (env var
-- JOINERY_LOCATION_ROOT_MATERIALIZED), as a project switching to joinery_upsert has it, then runs it
-- three times, this model with the root spelled as a path and its partitioned twin as a URI. Built
-- only with --vars '{upsert_location_root: true}'; the root comes from env var JOINERY_LOCATION_ROOT
-- (the twin's from JOINERY_LOCATION_ROOT_BY_CITY when set) and the rows from
-- JOINERY_LOCATION_ROOT_RUN (env vars, so that dbt parses only this folder again).
{{ config(
    enabled=var('upsert_location_root', false),
    materialized=env_var('JOINERY_LOCATION_ROOT_MATERIALIZED', 'joinery_upsert'),
    file_format='parquet', unique_key='customer_id',
    location_root=env_var('JOINERY_LOCATION_ROOT', '/tmp/joinery_location_root')
) }}

select
    customer_id,
    name,
    city
from values
    (1, 'Ada', 'Paris'),
    (2, 'Bo', 'Nice'),
    ({{ env_var('JOINERY_LOCATION_ROOT_RUN', '1') }} + 10, 'Run', 'Lyon')
        as changes (customer_id, name, city)
