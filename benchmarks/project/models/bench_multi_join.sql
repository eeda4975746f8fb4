-- Case multi_join: three inputs inner joined on one key. Only compiled: timed as a CTAS.
{{ joinery.multi_join(
    inputs={'a': source('bench', 'mj_a'), 'b': source('bench', 'mj_b'), 'c': source('bench', 'mj_c')},
    keys={'a': ['k'], 'b': ['k'], 'c': ['k']}
) }}
