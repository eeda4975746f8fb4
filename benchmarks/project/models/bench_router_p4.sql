-- Case router: port p4 of bench_router (reads only its partition).
{{ joinery.port(ref('bench_router'), 'p4') }}
