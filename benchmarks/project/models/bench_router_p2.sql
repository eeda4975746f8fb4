-- Case router: port p2 of bench_router (reads only its partition).
{{ joinery.port(ref('bench_router'), 'p2') }}
