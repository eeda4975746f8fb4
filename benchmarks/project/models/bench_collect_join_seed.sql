-- Case collect_join, the seed's shape (7 days of attribute rows per uid, 30 days of mappings), with the plan for it.
-- Only compiled: timed as a CTAS.
{{ joinery.collect_join(
    build=source('bench', 'cjs_build'),
    probe=source('bench', 'cjs_probe'),
    key='uid',
    values='attribute_ids',
    group='puid',
    build_rows_per_key='many'
) }}
