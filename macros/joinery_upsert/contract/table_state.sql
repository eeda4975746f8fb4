{#- What a delta or iceberg table's own commits say about it, read with one statement before an
    incremental run: how it was built (unique_key and partition_by, which an incremental run must
    match), and the recorded times of its last full build and last incremental run (the cost rule,
    contract/build_mode.sql). joinery stores nothing in a commit of its own: every commit carries its
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
            {% set found = modules.re.search('["\']executionTimeMs["\']\\s*:\\s*["\']([0-9]+)',
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
        note is how the table was built; its run's whole time (lead + commit - started) counts for its
        mode (`mode`, or the note's own), and a carried full build time counts where none is known yet.
        False, taking nothing, for a note of another table (a session setting that another dbt
        thread's commit carried, docs/upsert.md) or none. -#}
    {% set note = joinery._upsert_parse_build_note(text) %}
    {% if note is none or note.get('table') != joinery._upsert_table_digest(target) %}
        {{ return(false) }}
    {% endif %}
    {% if state.built is none %}
        {% do state.update({'built': note}) %}
    {% endif %}
    {% set between = joinery._spark_seconds_between(note.started, committed_at) %}
    {% set seconds = between + (note.get('lead') or 0) | float if between is not none else none %}
    {% do joinery._upsert_add_run_cost(state.costs, mode or note.mode, seconds, note.get('first') == '1') %}
    {% if state.costs.full_seconds is none and note.get('full_seconds') %}
        {% do state.costs.update({'full_seconds': note.full_seconds | float,
            'full_first': note.get('full_first') == '1'}) %}
    {% endif %}
    {{ return(true) }}
{% endmacro %}


{% macro _upsert_empty_state() %}
    {{ return({'built': none, 'costs': {'full_seconds': none, 'full_first': false, 'incremental_seconds': none,
        'full_builds_since_incremental': 0}}) }}
{% endmacro %}


{% macro _upsert_add_run_cost(costs, mode, seconds, first=false) %}
    {#- Take one commit into `costs`, newest first: the newest time of each mode (a full build's
        marked when it was the table's first, whose JVM was cold), and the full builds since the
        newest incremental run (the cost rule probes again after some). -#}
    {% if mode == 'incremental' and costs.incremental_seconds is none %}
        {% do costs.update({'incremental_seconds': seconds}) %}
    {% elif mode == 'full' %}
        {% if costs.full_seconds is none %}
            {% do costs.update({'full_seconds': seconds, 'full_first': first}) %}
        {% endif %}
        {% if costs.incremental_seconds is none %}
            {% do costs.update({'full_builds_since_incremental': costs.full_builds_since_incremental + 1}) %}
        {% endif %}
    {% endif %}
{% endmacro %}


{% macro _upsert_build_note(started, settings, mode, target=none, carried=none, lead=none, watermark=none,
        first=false, feeds=none, record=none) %}
    {#- What a commit notes about its run, as flat text (`mode=full,started=<Spark time>,lead=<s>,
        table=<digest>,unique_key=<md5>,partition_by=<md5>[,...]`: no quote, which a Thrift server
        would not escape in a map, and no semicolon, which ends a SET's value): the mode, the start
        of its first statement on Spark's clock and the seconds the run spent before it (`lead`), so
        that the run's whole time is lead + commit time - started (the cost rule's measure); the
        table it is for (`target`); digests of the key and partitioning it was built with (compared
        with the config; the readable forms are the table properties joinery.unique_key and
        joinery.partition_by); `first` on a table's first build; on an incremental run the last full
        build's time carried forward (`carried`: costs with full_seconds, full_first), and the newest
        value of the watermark column among the rows it wrote or read (`watermark`, text escaped by
        _upsert_note_text); on a commit of a change-feed model, the versions of the feeds the run read
        (`feeds`: {`feed_<digest>`: version}, pinned while the model compiled, change_feed/change_feed.sql);
        and the run's record (`record`, _upsert_run_record: path, reason, invocation, figures). -#}
    {% set parts = ['mode=' ~ mode, 'started=' ~ started] %}
    {% if lead is not none %}
        {% do parts.append('lead=%.3f' | format(lead)) %}
    {% endif %}
    {% if target is not none %}
        {% do parts.append('table=' ~ joinery._upsert_table_digest(target)) %}
    {% endif %}
    {% do parts.append('unique_key=' ~ local_md5(tojson(settings.unique_key | map('lower') | list))) %}
    {% do parts.append('partition_by=' ~ local_md5(tojson(settings.partition_by | map('lower') | list))) %}
    {% if first %}
        {% do parts.append('first=1') %}
    {% endif %}
    {% if (carried or {}).get('full_seconds') is not none %}
        {% do parts.append('full_seconds=%.3f' | format(carried.full_seconds)) %}
        {% if carried.get('full_first') %}
            {% do parts.append('full_first=1') %}
        {% endif %}
    {% endif %}
    {% if watermark is not none %}
        {% do parts.append('watermark=' ~ joinery._upsert_note_text(watermark)) %}
    {% endif %}
    {% for name, version in (feeds or {}) | dictsort %}
        {% do parts.append(name ~ '=' ~ version) %}
    {% endfor %}
    {% for name, value in (record or {}).items() if value is not none %}
        {% do parts.append(name ~ '=' ~ joinery._upsert_note_text(value)) %}
    {% endfor %}
    {{ return(parts | join(',')) }}
{% endmacro %}


{% macro _upsert_run_record(mode, figures=none) %}
    {#- What a commit's note records of its run beside its times (docs/operations.md, "The record of
        each run"): the path it took (`path`: first_build, full_refresh, cost_rule, rebuild for any
        other reason to build in full, incremental), why (`reason`, the build mode's text), dbt's
        `invocation` id, and `figures` where the run computed them before its commit (parquet:
        inserted, updated, deleted, rows, version, seconds); delta and iceberg commits keep their own
        row counts, which joinery.run_history reads. Ordered, so that notes compare equal as text. -#}
    {% set reason = mode.get('reason') or ('incremental' if not mode.full else 'full build') %}
    {% if not mode.full %}
        {% set path = 'incremental' %}
    {% elif reason == 'first build' %}
        {% set path = 'first_build' %}
    {% elif reason == 'full refresh' %}
        {% set path = 'full_refresh' %}
    {% elif reason.startswith('rebuilt') %}
        {% set path = 'cost_rule' %}
    {% else %}
        {% set path = 'rebuild' %}
    {% endif %}
    {% set record = {'path': path, 'reason': reason, 'invocation': invocation_id} %}
    {% for name in ['version', 'rows', 'inserted', 'updated', 'deleted', 'seconds']
            if (figures or {}).get(name) is not none %}
        {% do record.update({name: figures[name]}) %}
    {% endfor %}
    {{ return(record) }}
{% endmacro %}


{% macro _upsert_note_text(value, decode=false) %}
    {#- A value as note text: the characters a note cannot hold (`%` `,` `=` `;` `"` and backslash)
        escaped as %XX; with `decode`, the value back from such text. -#}
    {% set escapes = [['%', '%25'], [',', '%2C'], ['=', '%3D'], [';', '%3B'], ['"', '%22'], ['\\', '%5C']] %}
    {% set text = namespace(value=value | string) %}
    {% for plain, escaped in (escapes | reverse | list if decode else escapes) %}
        {% set text.value = text.value.replace(escaped, plain) if decode else text.value.replace(plain, escaped) %}
    {% endfor %}
    {{ return(text.value) }}
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
        {% do note.update({part.split('=', 1)[0]: joinery._upsert_note_text(part.split('=', 1)[1], decode=true)}) %}
    {% endfor %}
    {{ return(note) }}
{% endmacro %}


{% macro _upsert_previous_state() %}
    {#- What this model's table says of its earlier runs, for a capability that plans its run while the
        model compiles (contract/plan.sql): {'built': its newest note (_upsert_parse_build_note; none
        when it carries none), 'costs': the recorded times of its runs (the cost rule's)}. Delta and
        iceberg from their commits (one statement: the capability reads it once and passes it on),
        parquet, orc and Hive from the `joinery.note` and `joinery.costs` properties (dbt's relation
        cache lists them). On a full build, nothing. -#}
    {% if joinery._upsert_structural_build_mode().full %}
        {{ return({'built': none, 'costs': {}}) }}
    {% endif %}
    {% set file_format = (config.get('file_format') or 'parquet') | lower %}
    {% if joinery._upsert_commit_path(file_format) == 'merge' %}
        {% set state = joinery._upsert_table_state(this, {'file_format': file_format}) %}
    {% else %}
        {% set properties = joinery._upsert_cached_properties(this) %}
        {% set state = {'built': joinery._upsert_parse_build_note(properties.get('joinery.note')),
            'costs': fromjson(properties.get('joinery.costs') or '{}') or {}} %}
    {% endif %}
    {{ return(state) }}
{% endmacro %}


{% macro _upsert_cached_properties(relation) %}
    {#- A parquet, orc or Hive table's properties: from dbt's relation cache (`show table extended`
        lists a V1 table's properties), else one `show tblproperties`. -#}
    {% set cached = adapter.get_relation(database=relation.database, schema=relation.schema,
        identifier=relation.identifier) %}
    {% if cached is not none and cached.information %}
        {% set found = modules.re.search('(?m)^Table Properties: \\[(.*)\\]$', cached.information) %}
        {% if found %}
            {% set properties = {} %}
            {#- Properties are listed `k=v, k=v`; a value may hold `, ` (JSON), never `, name=`. -#}
            {% for part in modules.re.split(', (?=[A-Za-z0-9_.-]+=)', found.group(1)) if '=' in part %}
                {% do properties.update({part.split('=', 1)[0]: part.split('=', 1)[1]}) %}
            {% endfor %}
            {#- The listing leaves out properties whose value is empty: joinery writes these always. -#}
            {% for name in ['joinery.location_root', 'joinery.options'] if 'joinery.root' in properties %}
                {% do properties.setdefault(name, '') %}
            {% endfor %}
            {{ return(properties) }}
        {% endif %}
    {% endif %}
    {{ return(joinery._table_properties(relation.render())) }}
{% endmacro %}


{% macro _upsert_read_chunked_property(properties, name) %}
    {#- The value _upsert_chunked_property (directory_commit/journal.sql) stored: `name`, then `name.1`,
        `name.2`, ... up to the first empty or missing part (parts beyond it are left over from an
        older, longer value). Here so that joinery.run_history reads a table's `joinery.runs` too. -#}
    {% set value = namespace(text=properties.get(name) or '', ended=false) %}
    {% for index in range(1, properties | length + 1) if value.text != '' and not value.ended %}
        {% set part = properties.get(name ~ '.' ~ index) or '' %}
        {% set value.text = value.text ~ part %}
        {% set value.ended = part == '' %}
    {% endfor %}
    {{ return(value.text) }}
{% endmacro %}
