-- Case router: port p1 of bench_router (reads only its partition).
{{ joinery.port(ref('bench_router'), 'p1') }}
