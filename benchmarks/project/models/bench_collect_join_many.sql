-- Case collect_join, one build row per key, with the plan for several rows per key (shown for comparison).
-- Only compiled: timed as a CTAS.
{{ joinery.collect_join(
    build=source('bench', 'cj_build'),
    probe=source('bench', 'cj_probe'),
    key='uid',
    values='attribute_ids',
    group='puid',
    build_rows_per_key='many'
) }}
