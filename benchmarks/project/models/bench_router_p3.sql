-- Case router: port p3 of bench_router (reads only its partition).
{{ joinery.port(ref('bench_router'), 'p3') }}
