-- Case router: port p0 of bench_router (reads only its partition).
{{ joinery.port(ref('bench_router'), 'p0') }}
