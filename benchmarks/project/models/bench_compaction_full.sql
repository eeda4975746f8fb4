-- Case compaction_full: the compacted snapshot of cmp_snapshot and three deltas, newest ts wins.
-- Only compiled: the benchmark times this SELECT as a CTAS next to the baselines.
{{ joinery.compact(
    snapshot=source('bench', 'cmp_snapshot'),
    deltas=[source('bench', 'cmp_delta_1'), source('bench', 'cmp_delta_2'), source('bench', 'cmp_delta_3')],
    key='id',
    updated_at='ts'
) }}
