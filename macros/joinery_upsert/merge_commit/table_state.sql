{#- What a delta or iceberg table's own commits say about it, read with one statement before an
    incremental run: how it was built (unique_key and partition_by, which an incremental run must
    match), and the recorded times of its last full build and last incremental run (the cost rule,
    pipeline/rebuild.sql). joinery stores nothing in a commit of its own: every commit carries its
    run's note (_upsert_build_note), a delta full build in the table properties of its `create or
    replace` (`joinery.build`), a delta MERGE in its commit's userMetadata, an iceberg commit in its
    snapshot summary (`joinery.run`; _upsert_note_commit). An incremental run's note carries the last
    full build's time forward, so the cost rule knows it however many runs ago that build was. -#}

{% macro _upsert_table_state(target, settings) %}
    {#- {'built': the last full build's note (_upsert_parse_build_note), 'costs': {full_seconds,
        incremental_seconds, full_builds_since_incremental}}. The last HISTORY commits are read; when
        the last full build is older than those, its note comes from the table's properties (one
        more statement) and its time is not known (no cost rule until the next one). -#}
    {% set history = 20 %}
    {% set state = joinery._upsert_delta_state(target, history) if settings.file_format == 'delta'
        else joinery._upsert_iceberg_state(target, history) %}
    {% if state.built is none %}
        {% set properties = joinery._table_properties(target.render()) %}
        {% do state.update({'built': joinery._upsert_parse_build_note(properties.get('joinery.build'))}) %}
    {% endif %}
    {{ return(state) }}
{% endmacro %}


{% macro _upsert_delta_state(target, history) %}
    {#- From `describe history`: a full build's note (its table properties) and its time from the
        start it stored (Spark's clock) to its commit; a MERGE's note where it carries one (its
        userMetadata), else its own `executionTimeMs`. -#}
    {% set state = joinery._upsert_empty_state() %}
    {% set replaces = ['CREATE OR REPLACE TABLE AS SELECT', 'CREATE TABLE AS SELECT', 'REPLACE TABLE AS SELECT'] %}
    {% for row in run_query('describe history ' ~ target.render() ~ ' limit ' ~ history).rows %}
        {% if row['operation'] == 'MERGE' and not joinery._upsert_add_note(state, target, row['userMetadata'],
                row['timestamp'], 'incremental', loop.index0) %}
            {% set found = modules.re.search('"executionTimeMs"\\s*:\\s*"([0-9]+)"',
                row['operationMetrics'] | string) %}
            {% do joinery._upsert_add_run_cost(state.costs, 'incremental',
                found.group(1) | int / 1000 if found else none) %}
        {% elif row['operation'] in replaces %}
            {#- Maps arrive as JSON text; a Thrift server does not escape the quotes of a nested value
                (operationParameters' properties), which is why a note is flat text. -#}
            {% set found = modules.re.search('joinery\\.build[\\\\"]*\\s*:\\s*[\\\\"]*([^"\\\\]*)',
                row['operationParameters'] | string) %}
            {% do joinery._upsert_add_note(state, target, found.group(1) if found else none, row['timestamp'],
                'full', loop.index0) %}
        {% endif %}
    {% endfor %}
    {{ return(state) }}
{% endmacro %}


{% macro _upsert_iceberg_state(target, history) %}
    {#- From the `snapshots` metadata table: each joinery commit's `joinery.run` and its time from
        the start it stored to the snapshot's commit. -#}
    {% set state = joinery._upsert_empty_state() %}
    {% set rows = run_query("select cast(committed_at as string), summary['joinery.run'] from "
        ~ target.render() ~ '.snapshots order by committed_at desc limit ' ~ history).rows %}
    {% for row in rows %}
        {% do joinery._upsert_add_note(state, target, row[1], row[0], none, loop.index0) %}
    {% endfor %}
    {{ return(state) }}
{% endmacro %}


{% macro _upsert_add_note(state, target, text, committed_at, mode, age) %}
    {#- Take one commit's note into `state`, newest first (`age`: commits newer than it): the newest
        note is how the table was built; its time counts for its mode (`mode`, or the note's own),
        and a carried full build time counts where none is known yet (`full_age`: how old the
        commit it came from is). False, taking nothing, for a note of another table (a session
        setting that another dbt thread's commit carried, docs/upsert.md) or none. -#}
    {% set note = joinery._upsert_parse_build_note(text) %}
    {% if note is none or note.get('table') != joinery._upsert_table_digest(target) %}
        {{ return(false) }}
    {% endif %}
    {% if state.built is none %}
        {% do state.update({'built': note}) %}
    {% endif %}
    {% set known = state.costs.full_seconds is not none %}
    {% do joinery._upsert_add_run_cost(state.costs, mode or note.mode,
        joinery._spark_seconds_between(note.started, committed_at)) %}
    {% if state.costs.full_seconds is none and note.get('full_seconds') %}
        {% do state.costs.update({'full_seconds': note.full_seconds | float}) %}
    {% endif %}
    {% if not known and state.costs.full_seconds is not none %}
        {% do state.costs.update({'full_age': age}) %}
    {% endif %}
    {{ return(true) }}
{% endmacro %}


{% macro _upsert_empty_state() %}
    {{ return({'built': none, 'costs': {'full_seconds': none, 'incremental_seconds': none,
        'full_builds_since_incremental': 0}}) }}
{% endmacro %}


{% macro _upsert_add_run_cost(costs, mode, seconds) %}
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


{% macro _upsert_build_note(started, settings, mode, target=none, full_seconds=none) %}
    {#- What a commit notes about its run, as flat text (`mode=full,started=<Spark time>,table=<digest>,
        unique_key=<md5>,partition_by=<md5>[,full_seconds=<s>]`: no quote, which a Thrift server would
        not escape in a map, and no semicolon, which ends a SET's value): the mode, the start on
        Spark's clock (for the cost rule), the table it is for (`target`), digests of the key and partitioning
        it was built with (compared with the config; the readable forms are the table properties
        joinery.unique_key and joinery.partition_by), and on an incremental run the last full
        build's time, carried forward; on a commit of a change-feed model, the versions of the feeds
        the run read (`feed_<digest>=<version>`, change_feed/change_feed.sql). -#}
    {% set pins = joinery._upsert_read_versions() if target is not none else none %}
    {% set feeds = [] %}
    {% for name, version in (pins or {}) | dictsort %}
        {% do feeds.append(',' ~ name ~ '=' ~ version) %}
    {% endfor %}
    {{ return('mode=' ~ mode ~ ',started=' ~ started
        ~ (',table=' ~ joinery._upsert_table_digest(target) if target is not none else '')
        ~ ',unique_key=' ~ local_md5(tojson(settings.unique_key | map('lower') | list))
        ~ ',partition_by=' ~ local_md5(tojson(settings.partition_by | map('lower') | list))
        ~ (',full_seconds=%.3f' | format(full_seconds) if full_seconds is not none else '') ~ feeds | join('')) }}
{% endmacro %}


{% macro _upsert_table_digest(relation) %}
    {{ return(local_md5(relation.render() | lower)[:12]) }}
{% endmacro %}


{% macro _upsert_parse_build_note(text) %}
    {#- A note of _upsert_build_note as a mapping; none for anything else. -#}
    {% if text is not string or not text.startswith('mode=') %}
        {{ return(none) }}
    {% endif %}
    {% set note = {} %}
    {% for part in text.split(',') if '=' in part %}
        {% do note.update({part.split('=', 1)[0]: part.split('=', 1)[1]}) %}
    {% endfor %}
    {{ return(note) }}
{% endmacro %}
