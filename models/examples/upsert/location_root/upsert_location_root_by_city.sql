-- The partitioned twin of upsert_location_root_flat (see there). Each run adds one customer in a
-- partition of its own and leaves the others untouched.
{{ config(
    enabled=var('upsert_location_root', false), materialized='joinery_upsert',
    file_format='parquet', unique_key='customer_id', partition_by=['city'],
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
