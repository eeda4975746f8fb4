{#- What a delta or iceberg table's own commits say about it, read with one statement before an
    incremental run: how it was built (unique_key and partition_by, which an incremental run must
    match), and the recorded times of its last full build and last incremental run (the cost rule,
    pipeline/rebuild.sql). joinery stores nothing in a commit of its own: a full build writes its
    note (upsert_build_note) into the table properties of its `create or replace` (`joinery.build`),
    and an iceberg commit carries one in its snapshot summary (`joinery.run`, upsert_note_commit). -#}

{% macro upsert_table_state(target, settings) %}
    {#- {'built': the last full build's note (upsert_parse_build_note), 'costs': {full_seconds,
        incremental_seconds, full_builds_since_incremental}}. The last HISTORY commits are read; when
        the last full build is older than those, its note comes from the table's properties (one
        more statement) and its time is not known (no cost rule until the next one). -#}
    {% set history = 20 %}
    {% set state = joinery.upsert_delta_state(target, history) if settings.file_format == 'delta'
        else joinery.upsert_iceberg_state(target, history) %}
    {% if state.built is none %}
        {% set properties = joinery.table_properties(target.render()) %}
        {% do state.update({'built': joinery.upsert_parse_build_note(properties.get('joinery.build'))}) %}
    {% endif %}
    {{ return(state) }}
{% endmacro %}


{% macro upsert_delta_state(target, history) %}
    {#- From `describe history`: a MERGE's own `executionTimeMs`; a full build's time from the start it
        stored (`joinery.build`, Spark's clock) to its commit. -#}
    {% set state = joinery.upsert_empty_state() %}
    {% set replaces = ['CREATE OR REPLACE TABLE AS SELECT', 'CREATE TABLE AS SELECT', 'REPLACE TABLE AS SELECT'] %}
    {% for row in run_query('describe history ' ~ target.render() ~ ' limit ' ~ history).rows %}
        {#- Maps arrive as JSON text; a Thrift server does not escape the quotes of a nested value
            (operationParameters' properties), which is why a note is flat text. -#}
        {% if row['operation'] == 'MERGE' %}
            {% set found = modules.re.search('"executionTimeMs"\\s*:\\s*"([0-9]+)"',
                row['operationMetrics'] | string) %}
            {% do joinery.upsert_add_run_cost(state.costs, 'incremental',
                found.group(1) | int / 1000 if found else none) %}
        {% elif row['operation'] in replaces %}
            {% set found = modules.re.search('joinery\\.build[\\\\"]*\\s*:\\s*[\\\\"]*([^"\\\\]*)',
                row['operationParameters'] | string) %}
            {% set build = joinery.upsert_parse_build_note(found.group(1) if found else none) %}
            {% if build is not none and state.built is none %}
                {% do state.update({'built': build}) %}
            {% endif %}
            {% do joinery.upsert_add_run_cost(state.costs, 'full',
                joinery.upsert_seconds_between(build.started, row['timestamp']) if build is not none else none) %}
        {% endif %}
    {% endfor %}
    {{ return(state) }}
{% endmacro %}


{% macro upsert_iceberg_state(target, history) %}
    {#- From the `snapshots` metadata table: each joinery commit's `joinery.run` ({mode, started,
        unique_key, partition_by}), and its time from that start to the snapshot's commit. -#}
    {% set state = joinery.upsert_empty_state() %}
    {% set rows = run_query("select cast(committed_at as string), summary['joinery.run'] from "
        ~ target.render() ~ '.snapshots order by committed_at desc limit ' ~ history).rows %}
    {% for row in rows if joinery.upsert_parse_build_note(row[1]) is not none %}
        {% set run = joinery.upsert_parse_build_note(row[1]) %}
        {% if state.built is none %}
            {% do state.update({'built': run}) %}
        {% endif %}
        {% do joinery.upsert_add_run_cost(state.costs, run.mode, joinery.upsert_seconds_between(run.started, row[0])) %}
    {% endfor %}
    {{ return(state) }}
{% endmacro %}


{% macro upsert_empty_state() %}
    {{ return({'built': none, 'costs': {'full_seconds': none, 'incremental_seconds': none,
        'full_builds_since_incremental': 0}}) }}
{% endmacro %}


{% macro upsert_add_run_cost(costs, mode, seconds) %}
    {#- Take one commit into `costs`, newest first: the newest time of each mode, and the full builds
        since the newest incremental run (the cost rule probes again after some). -#}
    {% if mode == 'incremental' and costs.incremental_seconds is none %}
        {% do costs.update({'incremental_seconds': seconds}) %}
    {% elif mode == 'full' %}
        {% if costs.full_seconds is none %}
            {% do costs.update({'full_seconds': seconds}) %}
        {% endif %}
        {% if costs.incremental_seconds is none %}
            {% do costs.update({'full_builds_since_incremental': costs.full_builds_since_incremental + 1}) %}
        {% endif %}
    {% endif %}
{% endmacro %}


{% macro upsert_seconds_between(earlier, later) %}
    {#- Seconds from `earlier` to `later`: timestamps as Spark prints them in the session's time zone
        (`2026-11-27 23:45:14.399` or a datetime of it), none when either is missing. -#}
    {% if earlier is none or later is none %}
        {{ return(none) }}
    {% endif %}
    {% set parsed = [] %}
    {% for value in [earlier, later] %}
        {% set text = (value | string).replace('T', ' ') %}
        {% set whole = modules.datetime.datetime.strptime(text[:19], '%Y-%m-%d %H:%M:%S') %}
        {% set fraction = ('0.' ~ text[20:26]) | float if text[19:20] == '.' else 0 %}
        {% do parsed.append(whole.timestamp() + fraction) %}
    {% endfor %}
    {{ return(parsed[1] - parsed[0]) }}
{% endmacro %}


{% macro upsert_build_note(started, settings, mode) %}
    {#- What a commit notes about its run, as flat text (`mode=full,started=<Spark time>,unique_key=<md5>,
        partition_by=<md5>`: no quote, which a Thrift server would not escape in a map, and no
        semicolon, which ends a SET's value): the mode, the start on Spark's clock (for the cost
        rule), and digests of the key and partitioning it was built with (compared with the config;
        the readable forms are the table properties joinery.unique_key and joinery.partition_by). -#}
    {{ return('mode=' ~ mode ~ ',started=' ~ started
        ~ ',unique_key=' ~ local_md5(tojson(settings.unique_key | map('lower') | list))
        ~ ',partition_by=' ~ local_md5(tojson(settings.partition_by | map('lower') | list))) }}
{% endmacro %}


{% macro upsert_parse_build_note(text) %}
    {#- A note of upsert_build_note as a mapping; none for anything else. -#}
    {% if text is not string or not text.startswith('mode=') %}
        {{ return(none) }}
    {% endif %}
    {% set note = {} %}
    {% for part in text.split(',') if '=' in part %}
        {% do note.update({part.split('=', 1)[0]: part.split('=', 1)[1]}) %}
    {% endfor %}
    {{ return(note) }}
{% endmacro %}
