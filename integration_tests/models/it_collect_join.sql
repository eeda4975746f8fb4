-- joinery.collect_join from outside the package: the attributes of every user of a group, collected
-- per group (user 3 has no group, group g3 has no attributes).
{{ joinery.collect_join(
    build=ref('it_user_attributes'),
    probe=ref('it_user_groups'),
    key='uid',
    values='attrs',
    group='puid',
) }}
