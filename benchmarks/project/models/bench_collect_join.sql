-- Case collect_join: per puid the distinct attribute ids of its uids. Only compiled: timed as a CTAS.
{{ joinery.collect_join(
    build=source('bench', 'cj_build'),
    probe=source('bench', 'cj_probe'),
    key='uid',
    values='attribute_ids',
    group='puid'
) }}
