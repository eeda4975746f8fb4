-- Case router: the expensive upstream (a join, the view rt_upstream) routed into 5 ports in one
-- pass. Only compiled: timed as a CTAS partitioned by joinery_port, then each port is read.
{{ config(materialized='table') }}

{{ joinery.route(
    source('bench', 'rt_upstream'),
    ports=[
        {'name': 'p0', 'when': 'category = 0'},
        {'name': 'p1', 'when': 'category = 1'},
        {'name': 'p2', 'when': 'category = 2'},
        {'name': 'p3', 'when': 'category = 3'},
    ],
    default_port='p4'
) }}
