-- Case collect_join, the seed's shape, with the plan for one row per key (shown for comparison).
-- Only compiled: timed as a CTAS.
{{ joinery.collect_join(
    build=source('bench', 'cjs_build'),
    probe=source('bench', 'cjs_probe'),
    key='uid',
    values='attribute_ids',
    group='puid',
    build_rows_per_key='one'
) }}
