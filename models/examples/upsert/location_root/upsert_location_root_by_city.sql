-- The partitioned twin of upsert_location_root_flat (see there), stored as ORC: the one example of
-- that format. Each run adds one customer and writes the two others again.
{{ config(
    enabled=var('upsert_location_root', false), materialized='joinery_upsert',
    file_format='orc', unique_key='customer_id', partition_by=['city'],
    location_root=env_var('JOINERY_LOCATION_ROOT_BY_CITY', env_var('JOINERY_LOCATION_ROOT', '/tmp/joinery_location_root'))
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
